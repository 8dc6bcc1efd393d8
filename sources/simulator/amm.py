"""Constant-product pool arithmetic on integer raw amounts, as Uniswap V2 computes it."""

from math import isqrt

FEE_DENOMINATOR = 10_000
MINIMUM_LIQUIDITY = 1_000


def amount_out(amount_in: int, reserve_in: int, reserve_out: int, fee_bps: int) -> int:
    """Output of a swap of `amount_in` against (reserve_in, reserve_out) after the pool fee."""
    with_fee = amount_in * (FEE_DENOMINATOR - fee_bps)
    return with_fee * reserve_out // (reserve_in * FEE_DENOMINATOR + with_fee)


def k_holds(reserve_in: int, reserve_out: int, amount_in: int, out: int, fee_bps: int) -> bool:
    """The pool's invariant check: fee-adjusted balances keep x·y at least k."""
    adjusted_in = (reserve_in + amount_in) * FEE_DENOMINATOR - amount_in * fee_bps
    adjusted_out = (reserve_out - out) * FEE_DENOMINATOR
    return adjusted_in * adjusted_out >= reserve_in * reserve_out * FEE_DENOMINATOR**2


def initial_liquidity(amount0: int, amount1: int) -> int:
    """LP tokens minted by the first deposit (the minimum liquidity stays locked)."""
    return isqrt(amount0 * amount1) - MINIMUM_LIQUIDITY


def liquidity_for(amount0: int, reserve0: int, supply: int) -> int:
    """LP tokens minted for a proportional deposit of `amount0` against `reserve0`."""
    return amount0 * supply // reserve0
