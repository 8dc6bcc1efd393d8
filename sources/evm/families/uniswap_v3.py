"""Uniswap V3 and its forks: `PoolCreated` from the factory (the fee tier, the tick spacing);
`Swap` (signed amounts, the price after it as `sqrtPriceX96`), `Mint`, `Burn`, `Collect` and
`Initialize` from the pools. A pool has no LP token and no `Sync`: its reserves are its token
balances valued at its price, and a position is the position manager's NFT."""

from collections.abc import Callable

from sources.evm.families import (
    Collected,
    Family,
    Liquidity,
    Pool,
    PoolEvent,
    Price,
    SwapEvent,
    decoded,
    topic,
    topic_address,
)

POOL_CREATED = topic("PoolCreated(address,address,uint24,int24,address)")
SWAP_SIGNATURE = "Swap(address,address,int256,int256,uint160,uint128,int24)"
SWAP = topic(SWAP_SIGNATURE)
MINT = topic("Mint(address,address,int24,int24,uint128,uint256,uint256)")
BURN = topic("Burn(address,int24,int24,uint128,uint256,uint256)")
COLLECT = topic("Collect(address,address,int24,int24,uint128,uint128)")
INITIALIZE = topic("Initialize(uint160,int24)")
# A fee tier is in hundredths of a basis point (3000: 0.30 %).
FEE_UNITS_PER_BPS = 100
# The words of a `Swap`'s data every fork's begins with: the amounts, the price, the
# liquidity and the tick (a fork may add its own after them).
SWAP_WORDS = ["int256", "int256", "uint160", "uint128", "int24"]


def created(log: dict) -> Pool:
    """The pool a `PoolCreated` log announces, with its fee tier in basis points."""
    _, pool = decoded(["int24", "address"], log["data"])
    fee = int(log["topics"][3], 16)
    return Pool(pool.lower(), topic_address(log["topics"][1]), topic_address(log["topics"][2]),
                fee // FEE_UNITS_PER_BPS)


def reader(swap: str) -> Callable[[dict], PoolEvent | None]:
    """What a pool's log says (None for logs of other kinds), its swaps under topic `swap`."""

    def event(log: dict) -> PoolEvent | None:
        kind, data = log["topics"][0], log["data"]
        if kind == swap:
            amount0, amount1, sqrt_price, _, _ = decoded(SWAP_WORDS,
                                                         data[:2 + 64 * len(SWAP_WORDS)])
            return SwapEvent(topic_address(log["topics"][1]), topic_address(log["topics"][2]),
                             max(amount0, 0), max(amount1, 0), max(-amount0, 0),
                             max(-amount1, 0), sqrt_price)
        if kind == MINT:
            _, liquidity, amount0, amount1 = decoded(
                ["address", "uint128", "uint256", "uint256"], data)
            return Liquidity("mint", topic_address(log["topics"][1]), amount0, amount1,
                             liquidity)
        if kind == BURN:
            liquidity, amount0, amount1 = decoded(["uint128", "uint256", "uint256"], data)
            return Liquidity("burn", topic_address(log["topics"][1]), amount0, amount1,
                             liquidity)
        if kind == INITIALIZE:
            return Price(decoded(["uint160", "int24"], data)[0])
        if kind == COLLECT:
            return Collected()
        return None

    return event


def family(name: str, swap_signature: str) -> Family:
    """A Uniswap V3 fork whose pools say their swaps by `swap_signature`."""
    swap = topic(swap_signature)
    return Family(name, "concentrated_liquidity", POOL_CREATED, created,
                  (swap, MINT, BURN, COLLECT, INITIALIZE), reader(swap), pool_is_lp_token=False,
                  reserves_from_balances=True)


FAMILY = family("uniswap_v3", SWAP_SIGNATURE)
