"""Uniswap V4: one pool manager holds every pool. Its `Initialize` announces a pool (its id,
currencies, fee, tick spacing and hooks); its `Swap` and `ModifyLiquidity` carry the pool's
id as their first topic, so a pool's address in the lake is its id (32 bytes, 0x and 64 hex
digits, as the ecosystem's explorers and interfaces spell it). Native ETH is currency
`address(0)`. The manager keeps no balances per pool: a pool's reserves are its virtual
reserves, what its active liquidity `L` holds at its price (`L / √P` and `L · √P`), and a
position's amounts follow from its range and the price when it changed."""

import math
from decimal import Decimal, localcontext

from eth_abi import encode
from eth_utils import keccak

from sources.evm.families import (
    Family,
    Liquidity,
    Pool,
    PoolEvent,
    Price,
    Singleton,
    SwapEvent,
    decoded,
    topic,
    topic_address,
)
from sources.evm.families.uniswap_v3 import FEE_UNITS_PER_BPS

INITIALIZE = topic("Initialize(bytes32,address,address,uint24,int24,address,uint160,int24)")
SWAP = topic("Swap(bytes32,address,int128,int128,uint160,uint128,int24,uint24)")
MODIFY_LIQUIDITY = topic("ModifyLiquidity(bytes32,address,int24,int24,int256,bytes32)")
DONATE = topic("Donate(bytes32,address,uint256,uint256)")
# A fee is in hundredths of a basis point; this flag in a pool key's fee says a hook sets it
# (each swap's fee is then its `Swap`'s).
DYNAMIC_FEE = 0x800000
Q96 = 2**96
# Where the manager keeps its pools' state (`StateLibrary`): the mapping's slot, and the
# active liquidity's offset from a pool's first slot (which packs the price and the tick).
POOLS_SLOT = 6
LIQUIDITY_OFFSET = 3
EXTSLOAD = "0x" + keccak(text="extsload(bytes32)")[:4].hex()


def created(log: dict) -> Pool:
    """The pool an `Initialize` announces: its id, its currencies, its fee in basis points
    (0 while a hook sets it: its swaps' fees follow)."""
    fee, _, _, _, _ = decoded(["uint24", "int24", "address", "uint160", "int24"], log["data"])
    return Pool(log["topics"][1].lower(), topic_address(log["topics"][2]),
                topic_address(log["topics"][3]),
                0 if fee & DYNAMIC_FEE else fee // FEE_UNITS_PER_BPS)


def event(log: dict) -> PoolEvent | None:
    """What the manager's log of a pool says (None for logs of other kinds, `Donate` among
    them: a donation is its positions' fees, not the pool's liquidity)."""
    kind, data = log["topics"][0], log["data"]
    if kind == SWAP:
        # The amounts are the swapper's: negative is what it paid the pool.
        amount0, amount1, sqrt_price, liquidity, tick, fee = decoded(
            ["int128", "int128", "uint160", "uint128", "int24", "uint24"], data)
        return SwapEvent(topic_address(log["topics"][2]), topic_address(log["topics"][2]),
                         max(-amount0, 0), max(-amount1, 0), max(amount0, 0), max(amount1, 0),
                         sqrt_price, liquidity, tick, fee // FEE_UNITS_PER_BPS)
    if kind == MODIFY_LIQUIDITY:
        lower, upper, delta, salt = decoded(["int24", "int24", "int256", "bytes32"], data)
        if delta == 0:
            return None
        return Liquidity("mint" if delta > 0 else "burn", topic_address(log["topics"][2]), 0, 0,
                         abs(delta), (lower, upper), int.from_bytes(salt))
    if kind == INITIALIZE:
        _, _, _, sqrt_price, tick = decoded(["uint24", "int24", "address", "uint160", "int24"],
                                            data)
        return Price(sqrt_price, tick)
    return None


def state_slots(pool: str) -> tuple[str, str]:
    """The manager's storage slots of a pool's price and tick, and of its active liquidity."""
    first = int.from_bytes(keccak(bytes.fromhex(pool[2:]) + POOLS_SLOT.to_bytes(32, "big")))
    return f"0x{first:064x}", f"0x{first + LIQUIDITY_OFFSET:064x}"


def state_calls(manager: str, pool: str, block: str) -> list[tuple[str, list]]:
    """The `eth_call`s that read a pool's price, tick and active liquidity at `block`."""
    return [("eth_call", [{"to": manager, "data": EXTSLOAD + encode(["bytes32"], [
        bytes.fromhex(slot[2:])]).hex()}, block]) for slot in state_slots(pool)]


def read_state(slot0: object, liquidity: object) -> tuple[int, int, int]:
    """(√P as Q64.96, tick, active liquidity) from the two slots' answers (zeros for a pool
    not initialised, or an answer that is none)."""
    packed = int(slot0, 16) if isinstance(slot0, str) and len(slot0) > 2 else 0
    tick = (packed >> 160) & 0xFFFFFF
    active = int(liquidity, 16) if isinstance(liquidity, str) and len(liquidity) > 2 else 0
    return packed & (2**160 - 1), tick - (1 << 24) if tick >= 1 << 23 else tick, active


def sqrt_at_tick(tick: int) -> Decimal:
    """√(1.0001^tick) as Q64.96, to 60 digits (TickMath's own rounds this up to an integer)."""
    with localcontext() as ctx:
        ctx.prec = 60
        return (Decimal("1.0001") ** tick).sqrt() * Q96


def position_amounts(liquidity: int, ticks: tuple[int, int], sqrt_price: int, tick: int,
                     adding: bool) -> tuple[int, int]:
    """The tokens a change of `liquidity` between two ticks moves at the pool's price: token0
    above the price, token1 below it (rounded up when added, down when removed, as the pool
    settles)."""
    low, high = (sqrt_at_tick(t) for t in ticks)
    now = Decimal(sqrt_price)
    with localcontext() as ctx:
        ctx.prec = 60
        if tick < ticks[0]:
            amount0, amount1 = liquidity * (high - low) * Q96 / (low * high), Decimal(0)
        elif tick < ticks[1]:
            amount0 = liquidity * (high - now) * Q96 / (now * high)
            amount1 = liquidity * (now - low) / Q96
        else:
            amount0, amount1 = Decimal(0), liquidity * (high - low) / Q96
    rounded = math.ceil if adding else math.floor
    return rounded(amount0), rounded(amount1)


def virtual_reserves(liquidity: int, sqrt_price: int) -> tuple[int, int]:
    """What active liquidity `L` holds at price √P: L / √P of token0 and L · √P of token1."""
    return liquidity * Q96 // sqrt_price, liquidity * sqrt_price // Q96


FAMILY = Family("uniswap_v4", "concentrated_liquidity", INITIALIZE, created,
                (SWAP, MODIFY_LIQUIDITY, INITIALIZE, DONATE), event, pool_is_lp_token=False,
                singleton=Singleton(state_calls, read_state, virtual_reserves, position_amounts))
