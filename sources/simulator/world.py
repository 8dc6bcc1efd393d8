"""The simulated world: chains, venues, oracle feeds, tokens and wallets with their archetypes."""

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from core.feeds import FEED_BY_BASE, FeedSpec
from core.vocabulary import RENOUNCED_OWNERS
from sources.simulator import ids


@dataclass(frozen=True)
class ChainTemplate:
    """A chain the simulator can produce, with its venues."""

    slug: str
    chain_id: int
    display_name: str
    address_format: str
    explorer_url: str
    native: str
    decimals: int
    block_time_ms: int
    min_liquidity_usd: float
    weight: float
    dexes: tuple[str, ...]
    launchpads: tuple[str, ...]
    aggregator: str
    stable: str = "USDC"
    perps: str | None = None


CHAIN_TEMPLATES = [
    ChainTemplate("ethereum", 1, "Ethereum", "evm", "https://etherscan.io", "ETH", 18, 12_000,
                  10_000.0, 0.22, ("Uniswap V2", "SushiSwap", "PancakeSwap V2"),
                  ("Flaunch", "TokenMill"), "1inch"),
    ChainTemplate("solana", 1399811149, "Solana", "base58", "https://solscan.io", "SOL", 9, 400,
                  5_000.0, 0.3, ("Raydium", "Meteora", "PumpSwap"), ("Pump.fun", "LetsBonk"),
                  "Jupiter"),
    ChainTemplate("hyperliquid", 999, "Hyperliquid", "evm", "https://hyperevmscan.io", "HYPE", 18,
                  1_000, 5_000.0, 0.12, ("HyperSwap", "KittenSwap"), ("LiquidLaunch", "HyperPump"),
                  "LiquidSwap", perps="Hyperliquid Perps"),
    ChainTemplate("base", 8453, "Base", "evm", "https://basescan.org", "ETH", 18, 2_000, 5_000.0,
                  0.16, ("Aerodrome", "Uniswap V2", "BaseSwap"), ("Clanker", "Zora"), "0x"),
    ChainTemplate("tron", 728126428, "TRON", "base58check", "https://tronscan.org", "TRX", 6,
                  3_000, 5_000.0, 0.1, ("SunSwap", "JustMoney"), ("SunPump", "TronPad"), "SunIO",
                  stable="USDT"),
    ChainTemplate("sui", 784, "Sui", "hex32", "https://suivision.xyz", "SUI", 9, 250, 5_000.0, 0.1,
                  ("Cetus", "Turbos", "BlueMove"), ("MovePump", "Turbos.fun"), "Aftermath"),
    ChainTemplate("bsc", 56, "BNB Chain", "evm", "https://bscscan.com", "BNB", 18, 3_000, 5_000.0,
                  0.15, ("PancakeSwap", "BiSwap"), ("Four.meme", "Flap"), "OpenOcean"),
    ChainTemplate("arbitrum", 42161, "Arbitrum One", "evm", "https://arbiscan.io", "ETH", 18, 250,
                  5_000.0, 0.1, ("Camelot", "SushiSwap"), ("Camelot Launchpad", "ArbPad"),
                  "Odos"),
]

ARCHETYPES = ("ordinary", "skilled", "sniper", "bot", "market_maker", "wash", "transfer_only")
ARCHETYPE_SHARE = (0.72, 0.04, 0.04, 0.03, 0.015, 0.02, 0.135)

TOKEN_KINDS = ("established", "launchpad", "fresh", "honeypot", "rug", "orphan")
TOKEN_KIND_SHARE = (0.2, 0.3, 0.28, 0.05, 0.09, 0.08)


@dataclass
class VenueSpec:
    """A DEX, launchpad, perps venue or aggregator and its contracts on one chain."""

    venue_id: str
    name: str
    category: str
    factory: str
    factory_type: str
    router: str


@dataclass
class TokenSpec:
    """A token and the story the simulator will tell about it."""

    address: str
    symbol: str
    name: str
    decimals: int
    supply_raw: int
    kind: str
    deployer: str
    deployed_at: datetime
    is_quote: bool = False
    feed: FeedSpec | None = None
    status: int = 0
    honeypot_test: str = "untested"
    buy_tax: float = 0.0
    sell_tax: float = 0.0
    verified: bool = False
    categories: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OwnerStory:
    """What happens to an ownable token's owner: its deployer owns it from its deployment; it
    hands it to `heir` (renounces it when `heir` is a renounced owner) `after_s` seconds later,
    or never (None); its code holds `powers`."""

    after_s: float | None
    heir: str | None
    powers: tuple[str, ...]


# Per token kind: the chance the token is ownable, the chance its owner hands ownership on,
# the range of hours after the deployment when, and the owner-only powers its code may hold.
_OWNERSHIP = {
    "established": (1.0, 0.75, (24.0, 720.0), ("mint",)),
    "fresh": (0.8, 0.5, (0.1, 48.0), ("set_fees", "limit_transfers", "switch_trading")),
    "honeypot": (1.0, 0.0, (0.0, 0.0), ("blacklist", "set_fees", "switch_trading")),
    "rug": (1.0, 0.3, (1.0, 72.0), ("mint", "set_fees", "pause")),
    "orphan": (1.0, 0.5, (1.0, 240.0), ()),
}
# A renounced owner: the zero address, as `renounceOwnership` leaves it.
RENOUNCED_TO = RENOUNCED_OWNERS[0]


def owner_story(spec: TokenSpec, address_format: str, heirs: list[str]) -> OwnerStory | None:
    """The owner story of an EVM token of an ownable kind (None for the others: quotes,
    launchpad tokens, non-EVM chains), drawn from the token's address alone so that the rest
    of the world is drawn as before. A rug's owner hands ownership to one of `heirs`; the
    others renounce."""
    if address_format != "evm" or spec.kind not in _OWNERSHIP:
        return None
    ownable, hands_on, (low, high), powers = _OWNERSHIP[spec.kind]
    rng = np.random.default_rng(int.from_bytes(
        hashlib.blake2b(spec.address.encode(), digest_size=8).digest()))
    if rng.random() >= ownable:
        return None
    held = tuple(p for p in powers if rng.random() < 0.6)
    if rng.random() >= hands_on:
        return OwnerStory(None, None, held)
    heir = heirs[int(rng.integers(len(heirs)))] if spec.kind == "rug" else RENOUNCED_TO
    return OwnerStory(float(rng.uniform(low, high)) * 3_600.0, heir, held)


@dataclass
class Wallets:
    """The wallets of one chain, grouped by archetype."""

    by_archetype: dict[str, list[str]]
    deployers: list[str]
    rug_deployers: list[str]
    funders: list[str]

    def pick(self, archetype: str, rng: np.random.Generator) -> str:
        group = self.by_archetype[archetype]
        return group[int(rng.integers(len(group)))]


@dataclass
class ChainWorld:
    """Everything static about one simulated chain."""

    template: ChainTemplate
    role: str
    start: datetime
    indexed_until: datetime
    venues: list[VenueSpec]
    quotes: dict[str, TokenSpec]
    tokens: list[TokenSpec]
    wallets: Wallets
    unnamed_factory: str
    lockers: dict[str, str]


def venue_slug(name: str) -> str:
    """The venue id: its name in lower-case words joined by dashes."""
    return "-".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


def build_chain(template: ChainTemplate, role: str, start: datetime, end: datetime,
                n_swaps: int, rng: np.random.Generator) -> ChainWorld:
    """Draw one chain's venues, quote tokens, tokens and wallets."""
    fmt = template.address_format
    venues = [_venue(fmt, n, "dex", "constant_product") for n in template.dexes]
    venues += [_venue(fmt, n, "launchpad", "bonding_curve") for n in template.launchpads]
    venues.append(_venue(fmt, template.aggregator, "aggregator", "router"))
    if template.perps:
        venues.append(_venue(fmt, template.perps, "perps", "perp_orderbook"))
    lag = {"lagging": timedelta(minutes=4), "stopped": timedelta(hours=6)}.get(role, timedelta())
    n_wallets = int(np.clip(n_swaps / 30, 300, 120_000))
    wallets = _wallets(fmt, n_wallets, rng)
    quotes = _quotes(template, wallets, start)
    n_tokens = int(np.clip(n_swaps / 1_200, 40, 4_000))
    tokens = [_token(template, kind, wallets, start, end, rng)
              for kind in rng.choice(TOKEN_KINDS, size=n_tokens, p=TOKEN_KIND_SHARE)]
    lockers = {name: ids.named_address(fmt, f"{template.slug}:locker:{name}")
               for name in ("UNCX", "Team.Finance", "PinkLock")}
    return ChainWorld(template, role, start, end - lag, venues, quotes, tokens, wallets,
                      ids.named_address(fmt, f"{template.slug}:factory:unnamed"), lockers)


def _venue(fmt: str, name: str, category: str, factory_type: str) -> VenueSpec:
    return VenueSpec(venue_slug(name), name, category, ids.named_address(fmt, f"{name}:factory"),
                 factory_type, ids.named_address(fmt, f"{name}:router"))


def _wallets(fmt: str, n: int, rng: np.random.Generator) -> Wallets:
    addresses = ids.addresses(fmt, rng, n + 60)
    counts = np.maximum(np.round(np.array(ARCHETYPE_SHARE) * n).astype(int), 4)
    groups, cursor = {}, 0
    for archetype, count in zip(ARCHETYPES, counts, strict=True):
        groups[archetype] = addresses[cursor:cursor + count]
        cursor += count
    extra = addresses[cursor:]
    return Wallets(groups, deployers=extra[:30], rug_deployers=extra[30:40], funders=extra[40:60])


def _quotes(t: ChainTemplate, wallets: Wallets, start: datetime) -> dict[str, TokenSpec]:
    fmt = t.address_format
    genesis = start - timedelta(days=900)
    wrapped = TokenSpec(ids.named_address(fmt, f"{t.slug}:W{t.native}"), f"W{t.native}",
                        f"Wrapped {t.native}", t.decimals, 10**8 * 10**t.decimals, "quote",
                        wallets.funders[0], genesis, is_quote=True, feed=FEED_BY_BASE[t.native],
                        verified=True, categories=["wrapped"])
    stable = TokenSpec(ids.named_address(fmt, f"{t.slug}:{t.stable}"), t.stable,
                       "USD Coin" if t.stable == "USDC" else "Tether USD", 6,
                       5 * 10**10 * 10**6, "quote", wallets.funders[1], genesis, is_quote=True,
                       feed=FEED_BY_BASE[t.stable], verified=True, categories=["stablecoin"])
    return {"native": wrapped, "stable": stable}


_SYLLABLES = ("ba", "zo", "ki", "mu", "ra", "te", "lo", "pi", "no", "vu", "xe", "da", "fi", "go")


def _token(t: ChainTemplate, kind: str, wallets: Wallets, start: datetime, end: datetime,
           rng: np.random.Generator) -> TokenSpec:
    fmt = t.address_format
    name = "".join(rng.choice(_SYLLABLES, size=int(rng.integers(2, 4)))).capitalize()
    symbol = name.upper()[:6]
    decimals = {"evm": 18, "base58": 6, "base58check": 18, "hex32": 9}[fmt]
    span = (end - start).total_seconds()
    if kind == "established":
        deployed = start - timedelta(days=float(rng.uniform(30, 700)))
    else:
        deployed = start + timedelta(seconds=float(rng.uniform(0, span * 0.92)))
    deployer = (wallets.rug_deployers if kind in ("honeypot", "rug") else wallets.deployers)
    spec = TokenSpec(ids.address(fmt, rng.bytes(32)), symbol, name, decimals,
                     int(rng.choice([10**6, 10**8, 10**9, 10**10])) * 10**decimals, kind,
                     deployer[int(rng.integers(len(deployer)))], deployed,
                     verified=kind == "established" or rng.random() < 0.4,
                     categories=list(rng.choice(["meme", "ai", "defi", "gaming", "rwa"],
                                                size=int(rng.integers(0, 3)), replace=False)))
    if kind == "established":
        spec.honeypot_test = "pass"
    elif kind == "honeypot":
        spec.honeypot_test, spec.sell_tax, spec.status = "fail", 1.0, 999
    elif kind == "rug":
        spec.status = 1000
        spec.buy_tax = float(rng.choice([0.0, 0.05, 0.1]))
        spec.sell_tax = float(rng.choice([0.0, 0.1, 0.25]))
    elif kind == "orphan":
        spec.status = 1
    elif rng.random() < 0.5:
        spec.honeypot_test = "pass"
        spec.buy_tax = spec.sell_tax = float(rng.choice([0.0, 0.0, 0.01, 0.03]))
    return spec


def registry_ids(slug: str, symbol: str) -> tuple[str, str]:
    """Stable registry and instance uuids for a token known to the canonical registry."""
    token = uuid.uuid5(uuid.NAMESPACE_URL, f"chaintape:token:{symbol}")
    instance = uuid.uuid5(token, slug)
    return str(token), str(instance)
