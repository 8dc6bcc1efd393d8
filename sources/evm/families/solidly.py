"""Solidly-style pools (Velodrome V2, Aerodrome, and their forks): the factory's `PoolCreated`
says whether a pool is stable; `Swap`, `Sync`, `Mint`, `Burn` and `Fees` from the pools, each
its own LP token. A volatile pool is constant-product; a stable pool trades on x³y + y³x (its
amounts scaled to 18 decimals), so its price is that curve's marginal price at its reserves,
not their ratio. Each pool's fee is its factory's `getFee(pool, stable)`, in basis points."""

from fractions import Fraction

from eth_abi import encode

from sources.evm.families import Family, Pool, Reserves, decoded, topic, topic_address, uniswap_v2

POOL_CREATED = topic("PoolCreated(address,address,bool,address,uint256)")
SWAP = topic("Swap(address,address,uint256,uint256,uint256,uint256)")
SYNC = topic("Sync(uint256,uint256)")
MINT = topic("Mint(address,uint256,uint256)")
BURN = topic("Burn(address,address,uint256,uint256)")
FEES = topic("Fees(address,uint256,uint256)")
GET_FEE = "0x" + topic("getFee(address,bool)")[2:10]
# Aerodrome's factory answers this for a pool it charges nothing.
ZERO_FEE_INDICATOR = 420
STABLE = "stable_swap"


def created(log: dict) -> Pool:
    """The pool a `PoolCreated` log announces (its fee asked of the factory apart)."""
    pool, _ = decoded(["address", "uint256"], log["data"])
    stable = int(log["topics"][3], 16) == 1
    return Pool(pool.lower(), topic_address(log["topics"][1]), topic_address(log["topics"][2]),
                0, STABLE if stable else "constant_product")


def fee_call(pool: Pool) -> str:
    """The factory call that answers the pool's fee."""
    return GET_FEE + encode(["address", "bool"], [pool.address, pool.factory_type == STABLE]).hex()


def fee_bps(answer: int) -> int:
    """The factory's fee answer as basis points."""
    return 0 if answer == ZERO_FEE_INDICATOR else answer


def marginal_price(reserve0: int, reserve1: int, decimals0: int, decimals1: int) -> Fraction:
    """A stable pool's price, token1 per token0 in raw units: the marginal rate of x³y + y³x
    at its reserves scaled to whole tokens, (3x²y + y³) / (x³ + 3xy²)."""
    x, y = Fraction(reserve0, 10**decimals0), Fraction(reserve1, 10**decimals1)
    return (3 * x * x * y + y**3) / (x**3 + 3 * x * y * y) * 10**decimals1 / 10**decimals0


def valued(factory_type: str, reserves: Reserves, decimals0: int, decimals1: int) -> Reserves:
    """A stable pool's reserves as two equal halves at its marginal price (their ratio its
    price, their worth its holdings'); a volatile pool's as logged."""
    r0, r1 = reserves.reserve0, reserves.reserve1
    if factory_type != STABLE or not r0 or not r1:
        return reserves
    price = marginal_price(r0, r1, decimals0, decimals1)
    half = (r1 + r0 * price) / 2
    return Reserves(int(half / price), int(half))


# `Fees` is read and left: a swap's fee is in its input already.
FAMILY = Family("solidly", "solidly", POOL_CREATED, created, (SWAP, SYNC, MINT, BURN, FEES),
                uniswap_v2.reader(SWAP, SYNC, MINT, BURN, "uint256"), pool_is_lp_token=True,
                fee_call=fee_call, fee_bps=fee_bps, valued=valued)
