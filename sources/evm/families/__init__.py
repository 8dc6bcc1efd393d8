"""Pool families: how a factory says it made a pool and what its pools' logs mean. A family is
one module; adding one is adding its module here."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eth_abi import decode
from eth_utils import keccak


def topic(signature: str) -> str:
    """An event's topic 0: the hex Keccak-256 of its signature."""
    return "0x" + keccak(text=signature).hex()


def decoded(types: list[str], data: str) -> tuple[Any, ...]:
    """ABI-encoded data (a log's, or a call's answer) as the values of `types` (an address as
    lower-case 0x text)."""
    body = data.removeprefix("0x")
    if all(t in WORDS for t in types) and len(body) >= 64 * len(types):
        # Every event the families read is of one-word types: read word by word, as eth-abi
        # would, at a tenth of its cost per log.
        return tuple(WORDS[t](int(body[64 * i:64 * i + 64], 16)) for i, t in enumerate(types))
    return tuple(decode(types, bytes.fromhex(body)))


def _unsigned(bits: int) -> Callable[[int], int]:
    def read(word: int) -> int:
        if word >> bits:
            raise ValueError(f"a uint{bits} word carries {word:#x}")
        return word
    return read


def _signed(bits: int) -> Callable[[int], int]:
    def read(word: int) -> int:
        value = word - (1 << 256) if word >> 255 else word
        if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            raise ValueError(f"an int{bits} word carries {word:#x}")
        return value
    return read


def _address(word: int) -> str:
    if word >> 160:
        raise ValueError(f"an address word carries {word:#x}")
    return f"0x{word:040x}"


def _bool(word: int) -> bool:
    if word > 1:
        raise ValueError(f"a bool word carries {word:#x}")
    return word == 1


# The one-word ABI types by name, and how a word reads as each (rejecting what eth-abi would).
WORDS: dict[str, Callable[[int], Any]] = {
    **{f"uint{n}": _unsigned(n) for n in range(8, 257, 8)},
    **{f"int{n}": _signed(n) for n in range(8, 257, 8)},
    "address": _address, "bool": _bool, "bytes32": lambda word: word.to_bytes(32, "big"),
}


def topic_address(value: str) -> str:
    """An indexed address topic as a lower-case 0x address."""
    return "0x" + value[-40:].lower()


@dataclass(frozen=True)
class Pool:
    """A pool a factory made."""

    address: str
    token0: str
    token1: str
    fee_bps: int
    # The pool's curve where its family makes more than one (a Solidly stable pool's); None:
    # its family's.
    factory_type: str | None = None


@dataclass(frozen=True)
class SwapEvent:
    """A pool swap: what went in and out on each side; a concentrated-liquidity pool's price
    after it (`sqrt_price_x96`, token1 per token0 as a Q64.96 square root), and where the log
    says them its active liquidity and tick after it and the fee it charged (basis points)."""

    sender: str
    recipient: str
    amount0_in: int
    amount1_in: int
    amount0_out: int
    amount1_out: int
    sqrt_price_x96: int | None = None
    liquidity: int | None = None
    tick: int | None = None
    fee_bps: int | None = None


@dataclass(frozen=True)
class Price:
    """A concentrated-liquidity pool's price set without a swap (its `Initialize`), and its
    tick where the log says it."""

    sqrt_price_x96: int
    tick: int | None = None


@dataclass(frozen=True)
class Collected:
    """Tokens a concentrated-liquidity position took out of its pool (`Collect`)."""


@dataclass(frozen=True)
class Reserves:
    """A pool's reserves after a log."""

    reserve0: int
    reserve1: int


@dataclass(frozen=True)
class Liquidity:
    """Liquidity added (`mint`) or removed (`burn`); `owner` None when the pool's LP token
    transfers of the same transaction name it; `ticks` the position's range where the log
    does not say the amounts (they follow from the pool's price: a singleton's); `salt` the
    position's salt where it names it (a V4 position manager's NFT id)."""

    kind: str
    owner: str | None
    amount0: int
    amount1: int
    liquidity: int | None
    ticks: tuple[int, int] | None = None
    salt: int | None = None


PoolEvent = SwapEvent | Reserves | Liquidity | Price | Collected
# A pool's logged reserves as the lake keeps them, by its factory type and its tokens' decimals.
Valued = Callable[[str, Reserves, int, int], Reserves]


@dataclass(frozen=True)
class Family:
    """A pool family: the lake's factory type for it, the factory's creation topic and decoder,
    and the pools' topics (their swap's first) and decoder."""

    name: str
    factory_type: str
    created_topic: str
    created: Callable[[dict], Pool]
    pool_topics: tuple[str, ...]
    event: Callable[[dict], PoolEvent | None]
    # Whether a pool is its own LP token (V2) whose transfers name liquidity owners.
    pool_is_lp_token: bool
    # Whether a pool's reserves are its token balances valued at its price (concentrated
    # liquidity: no `Sync`), rather than told by its logs.
    reserves_from_balances: bool = False
    # The call data that asks the factory a new pool's fee, where its creation log does not
    # say it, and the answer as basis points.
    fee_call: Callable[[Pool], str] | None = None
    fee_bps: Callable[[int], int] = int
    # A pool's logged reserves as the lake keeps them (their ratio its price, twice either
    # side its holdings' worth), by the pool's factory type and its tokens' decimals, where
    # its price is not its reserves' ratio.
    valued: Valued | None = None
    # Set where the factory is a singleton holding every pool (Uniswap V4's pool manager): a
    # pool is an id, its logs the singleton's with the id as their first topic, and its
    # reserves follow from its active liquidity and price, read as `Singleton` says.
    singleton: "Singleton | None" = None


@dataclass(frozen=True)
class Singleton:
    """How a singleton's pools' state is read and valued: the calls that read a pool's price,
    tick and active liquidity at a block (manager, pool, block) and their answers read as
    (√P Q64.96, tick, liquidity); what the liquidity holds at a price; the amounts a change of
    liquidity between two ticks moves at a price and tick (rounded up when added)."""

    state_calls: Callable[[str, str, str], list[tuple[str, list]]]
    read_state: Callable[[object, object], tuple[int, int, int]]
    reserves: Callable[[int, int], tuple[int, int]]
    amounts: Callable[[int, tuple[int, int], int, int, bool], tuple[int, int]]


def _families() -> dict[str, Family]:
    from sources.evm.families import pancakeswap_v3, solidly, uniswap_v2, uniswap_v3, uniswap_v4

    return {f.name: f for f in (uniswap_v2.FAMILY, uniswap_v3.FAMILY, pancakeswap_v3.FAMILY,
                                solidly.FAMILY, uniswap_v4.FAMILY)}


FAMILIES = _families()
