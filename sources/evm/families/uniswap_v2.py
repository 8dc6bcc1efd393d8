"""Uniswap V2 and its forks: `PairCreated` from the factory; `Swap`, `Sync`, `Mint` and `Burn`
from the pairs, each pair being its own LP token."""

from sources.evm.families import (
    Family,
    Liquidity,
    Pool,
    PoolEvent,
    Reserves,
    SwapEvent,
    topic,
    topic_address,
    words,
)

PAIR_CREATED = topic("PairCreated(address,address,address,uint256)")
SWAP = topic("Swap(address,uint256,uint256,uint256,uint256,address)")
SYNC = topic("Sync(uint112,uint112)")
MINT = topic("Mint(address,uint256,uint256)")
BURN = topic("Burn(address,uint256,uint256,address)")
FEE_BPS = 30


def created(log: dict) -> Pool:
    """The pair a `PairCreated` log announces."""
    pair = words(log["data"])[0]
    return Pool("0x" + f"{pair:040x}", topic_address(log["topics"][1]),
                topic_address(log["topics"][2]), FEE_BPS)


def event(log: dict) -> PoolEvent | None:
    """What a pair's log says (None for logs of other kinds)."""
    kind, data = log["topics"][0], words(log["data"])
    if kind == SWAP:
        return SwapEvent(topic_address(log["topics"][1]), topic_address(log["topics"][2]),
                       data[0], data[1], data[2], data[3])
    if kind == SYNC:
        return Reserves(data[0], data[1])
    if kind == MINT:
        return Liquidity("mint", None, data[0], data[1], None)
    if kind == BURN:
        return Liquidity("burn", topic_address(log["topics"][2]), data[0], data[1], None)
    return None


FAMILY = Family("uniswap_v2", "constant_product", PAIR_CREATED, created,
                (SWAP, SYNC, MINT, BURN), event, pool_is_lp_token=True)
