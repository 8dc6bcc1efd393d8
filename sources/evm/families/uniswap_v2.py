"""Uniswap V2 and its forks: `PairCreated` from the factory; `Swap`, `Sync`, `Mint` and `Burn`
from the pairs, each pair being its own LP token."""

from collections.abc import Callable

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


def reader(swap: str, sync: str, mint: str, burn: str,
           reserve: str) -> Callable[[dict], PoolEvent | None]:
    """What a pair's log says (None for logs of other kinds), for a family whose pairs say
    their swaps, syncs, mints and burns by these topics (a swap's recipient and a burn's `to`
    indexed second) and their reserves as words of type `reserve`."""

    def event(log: dict) -> PoolEvent | None:
        kind, data = log["topics"][0], log["data"]
        if kind == swap:
            return SwapEvent(topic_address(log["topics"][1]), topic_address(log["topics"][2]),
                             *decoded(["uint256"] * 4, data))
        if kind == sync:
            return Reserves(*decoded([reserve, reserve], data))
        if kind == mint:
            amount0, amount1 = decoded(["uint256", "uint256"], data)
            return Liquidity("mint", None, amount0, amount1, None)
        if kind == burn:
            amount0, amount1 = decoded(["uint256", "uint256"], data)
            return Liquidity("burn", topic_address(log["topics"][2]), amount0, amount1, None)
        return None

    return event


FAMILY = Family("uniswap_v2", "constant_product", PAIR_CREATED, created,
                (SWAP, SYNC, MINT, BURN), reader(SWAP, SYNC, MINT, BURN, "uint112"),
                pool_is_lp_token=True)
