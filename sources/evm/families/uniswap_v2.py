"""Uniswap V2 and its forks: `PairCreated` from the factory; `Swap`, `Sync`, `Mint` and `Burn`
from the pairs, each pair being its own LP token."""

from sources.evm.families import (
    Family,
    Liquidity,
    Pool,
    PoolEvent,
    Reserves,
    SwapEvent,
    decoded,
    topic,
    topic_address,
)

PAIR_CREATED = topic("PairCreated(address,address,address,uint256)")
SWAP = topic("Swap(address,uint256,uint256,uint256,uint256,address)")
SYNC = topic("Sync(uint112,uint112)")
MINT = topic("Mint(address,uint256,uint256)")
BURN = topic("Burn(address,uint256,uint256,address)")
FEE_BPS = 30


def created(log: dict) -> Pool:
    """The pair a `PairCreated` log announces."""
    pair, _ = decoded(["address", "uint256"], log["data"])
    return Pool(pair.lower(), topic_address(log["topics"][1]), topic_address(log["topics"][2]),
                FEE_BPS)


def event(log: dict) -> PoolEvent | None:
    """What a pair's log says (None for logs of other kinds)."""
    kind, data = log["topics"][0], log["data"]
    if kind == SWAP:
        return SwapEvent(topic_address(log["topics"][1]), topic_address(log["topics"][2]),
                         *decoded(["uint256"] * 4, data))
    if kind == SYNC:
        return Reserves(*decoded(["uint112", "uint112"], data))
    if kind == MINT:
        amount0, amount1 = decoded(["uint256", "uint256"], data)
        return Liquidity("mint", None, amount0, amount1, None)
    if kind == BURN:
        amount0, amount1 = decoded(["uint256", "uint256"], data)
        return Liquidity("burn", topic_address(log["topics"][2]), amount0, amount1, None)
    return None


FAMILY = Family("uniswap_v2", "constant_product", PAIR_CREATED, created,
                (SWAP, SYNC, MINT, BURN), event, pool_is_lp_token=True)
