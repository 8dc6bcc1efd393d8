"""The venues file: which chain an ingest follows, its venues and the quote tokens' feeds.
Every key is checked before anything is written; a mistake is refused naming its key."""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.feeds import feed_id
from sources.evm.families import FAMILIES
from sources.hermes import canonical, own_id

ADDRESS = re.compile(r"^(0x)?[0-9a-fA-F]{40}$")
SLUG = re.compile(r"^[a-z0-9-]{1,32}$")
# A quote token's price sources (docs/ingest.md, "Prices").
SOURCES = ("chainlink", "hermes", "peg")
HERMES_ID = re.compile(r"^(0[xX])?[0-9a-fA-F]{64}$")
# The chain's native currency where a pool holds it as such (a Uniswap V4 pool's).
NATIVE = "0x" + "0" * 40


class ConfigError(ValueError):
    """A venues file that cannot be followed: names the key at fault."""


@dataclass(frozen=True)
class ChainConfig:
    """The chain's `chains` row, but for its id, which the node gives."""

    slug: str
    display_name: str
    explorer_url: str
    native_symbol: str
    native_token: str
    block_time_ms: int | None
    min_liquidity_usd: float
    # The liquidity under which a pool never sets a derived price (docs/ingest.md, "Prices").
    derive_min_liquidity_usd: float = 10_000.0


@dataclass(frozen=True)
class VenueConfig:
    """A factory and the DEX it belongs to."""

    factory: str
    name: str
    family: str
    router: str
    launchpad: str | None
    # A concentrated-liquidity venue's position manager: its NFTs are the positions.
    position_manager: str | None = None

    @property
    def venue_id(self) -> str:
        """The venue's id: its name in lower-case words joined by dashes."""
        return "-".join("".join(c if c.isalnum() else " " for c in self.name.lower()).split())


@dataclass(frozen=True)
class QuoteConfig:
    """A quote token and what prices it: a Chainlink aggregator on the chain, a feed of the
    Hermes upstream, or a peg."""

    token: str
    source: str
    aggregator: str | None = None
    peg_usd: float | None = None
    hermes_id: str | None = None

    def feed_id(self, chain_id: int) -> str:
        """The oracle feed the quote's prices are written under: the aggregator's or the
        peg's on this chain, or the Hermes feed's (one feed whichever chain it prices)."""
        if self.aggregator is not None:
            return chainlink_feed_id(chain_id, self.aggregator)
        if self.hermes_id is not None:
            return own_id(self.hermes_id)
        return feed_id("peg", f"{chain_id}:{self.token}")


def chainlink_feed_id(chain_id: int, aggregator: str) -> str:
    """The feed of a Chainlink aggregator on a chain."""
    return feed_id("chainlink", f"{chain_id}:{aggregator}")


@dataclass(frozen=True)
class IngestConfig:
    """A whole venues file."""

    chain: ChainConfig
    venues: tuple[VenueConfig, ...]
    quotes: tuple[QuoteConfig, ...]

    def feeds(self, chain_id: int) -> dict[str, str]:
        """The feed of each quote token on this chain; the chain's native currency (the zero
        address, as Uniswap V4 names it) priced as its wrapped native token is."""
        feeds = {q.token: q.feed_id(chain_id) for q in self.quotes}
        if self.chain.native_token in feeds:
            feeds.setdefault(NATIVE, feeds[self.chain.native_token])
        return feeds

    @property
    def hermes_ids(self) -> list[str]:
        """The Hermes upstream's feeds the quotes name."""
        return sorted({q.hermes_id for q in self.quotes if q.hermes_id is not None})


def load(path: Path | str) -> IngestConfig:
    """Read and check a venues file."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not YAML: {err}") from None
    return parse(document)


def parse(document: Any) -> IngestConfig:
    """Check a venues document already read."""
    top = _mapping(document, "the file", required={"chain", "venues", "quotes"})
    chain = _mapping(top["chain"], "chain", required={"slug", "display_name", "explorer_url"},
                     optional={"native_symbol", "native_token", "block_time_ms",
                               "min_liquidity_usd", "derive_min_liquidity_usd"})
    slug = _text(chain, "slug", "chain")
    if not SLUG.match(slug):
        raise ConfigError(f"chain.slug: {slug!r} is not 1-32 lower-case letters, digits or '-'")
    explorer = _text(chain, "explorer_url", "chain")
    if not explorer.startswith("https://"):
        raise ConfigError(f"chain.explorer_url: {explorer!r} does not start with https://")
    block_time = chain.get("block_time_ms")
    if block_time is not None and (not isinstance(block_time, int) or isinstance(block_time, bool)
                                   or block_time <= 0):
        raise ConfigError(f"chain.block_time_ms: {block_time!r} is not a positive integer")
    floor = _usd(chain, "min_liquidity_usd", 0.0)
    derive_floor = _usd(chain, "derive_min_liquidity_usd", ChainConfig.derive_min_liquidity_usd)
    native = chain.get("native_token")
    config_chain = ChainConfig(
        slug, _text(chain, "display_name", "chain"), explorer,
        str(chain.get("native_symbol", "ETH")),
        address(native, "chain.native_token") if native is not None else NATIVE,
        block_time, floor, derive_floor)
    venues = _list(top["venues"], "venues")
    factories: set[str] = set()
    parsed_venues = []
    for i, raw in enumerate(venues):
        where = f"venues[{i}]"
        venue = _mapping(raw, where, required={"factory", "name", "type"},
                         optional={"router", "launchpad", "position_manager"})
        factory = address(venue["factory"], f"{where}.factory")
        if factory in factories:
            raise ConfigError(f"{where}.factory: {factory} is named twice")
        factories.add(factory)
        family = _text(venue, "type", where)
        if family not in FAMILIES:
            raise ConfigError(f"{where}.type: {family!r} is not one of {', '.join(FAMILIES)}")
        router = venue.get("router")
        launchpad = venue.get("launchpad")
        manager = venue.get("position_manager")
        parsed_venues.append(VenueConfig(
            factory, _text(venue, "name", where), family,
            address(router, f"{where}.router") if router is not None else "",
            address(launchpad, f"{where}.launchpad") if launchpad is not None else None,
            address(manager, f"{where}.position_manager") if manager is not None else None))
    quotes = _list(top["quotes"], "quotes")
    parsed_quotes = [_quote(raw, f"quotes[{i}]") for i, raw in enumerate(quotes)]
    if len({q.token for q in parsed_quotes}) < len(parsed_quotes):
        raise ConfigError("quotes: a token is named twice")
    return IngestConfig(config_chain, tuple(parsed_venues), tuple(parsed_quotes))


def _quote(raw: Any, where: str) -> QuoteConfig:
    """A quote token and its one price source."""
    if isinstance(raw, dict) and "feed" in raw:
        raise ConfigError(f"{where}.feed: the simulated oracle prices the simulator's lake "
                          "alone; price a real chain's quote token with `chainlink: "
                          "<aggregator address>`, `hermes: <feed id>` or `peg: <usd>` "
                          "(docs/ingest.md)")
    quote = _mapping(raw, where, required={"token"}, optional=set(SOURCES))
    token = address(quote["token"], f"{where}.token")
    given = [key for key in SOURCES if key in quote]
    if len(given) != 1:
        raise ConfigError(f"{where}: name one price source of {', '.join(SOURCES)} "
                          f"({'none' if not given else ' and '.join(given)} given)")
    if given[0] == "chainlink":
        return QuoteConfig(token, "chainlink", aggregator=address(quote["chainlink"],
                                                                  f"{where}.chainlink"))
    if given[0] == "hermes":
        named = quote["hermes"]
        if not isinstance(named, str) or not HERMES_ID.match(named):
            raise ConfigError(f"{where}.hermes: {named!r} is not a feed id (32 bytes of hex)")
        return QuoteConfig(token, "hermes", hermes_id=canonical(named))
    peg = quote["peg"]
    if not isinstance(peg, int | float) or isinstance(peg, bool) or not 0 < peg < 1e12:
        raise ConfigError(f"{where}.peg: {peg!r} is not a price in USD above 0")
    return QuoteConfig(token, "peg", peg_usd=float(peg))


def _usd(chain: dict[str, Any], key: str, default: float) -> float:
    value = chain.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"chain.{key}: {value!r} is not a number >= 0")
    return float(value)


@dataclass(frozen=True)
class FollowedChain:
    """One chain of a chains file: its node, its venues file and how hard to ask the node."""

    rpc: str
    venues: Path
    config: IngestConfig
    rpc_concurrency: int | None
    max_rps: float | None


@dataclass(frozen=True)
class ChainsConfig:
    """A whole chains file: the chains one lake follows, and the Hermes upstream of their
    `hermes:` quotes."""

    chains: tuple[FollowedChain, ...]
    hermes: str | None


def load_chains(path: Path | str) -> ChainsConfig:
    """Read and check a chains file, and each venues file it names (relative to it)."""
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not YAML: {err}") from None
    top = _mapping(document, "the file", required={"chains"}, optional={"hermes"})
    hermes = top.get("hermes")
    if hermes is not None and (not isinstance(hermes, str)
                               or not hermes.startswith(("http://", "https://"))):
        raise ConfigError(f"hermes: {hermes!r} is not an http(s) URL")
    followed = []
    for i, raw in enumerate(_list(top["chains"], "chains")):
        where = f"chains[{i}]"
        entry = _mapping(raw, where, required={"rpc", "venues"},
                         optional={"rpc_concurrency", "max_rps"})
        rpc = _text(entry, "rpc", where)
        if not rpc.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.rpc: {rpc!r} is not an http(s) URL")
        venues = Path(path).parent / _text(entry, "venues", where)
        try:
            config = load(venues)
        except ConfigError as err:
            raise ConfigError(f"{where}.venues: {err}") from None
        if config.hermes_ids and hermes is None:
            raise ConfigError(f"{where}.venues: {venues} prices a quote by a Hermes feed: name "
                              "the upstream (`hermes: URL` at the top)")
        concurrency = entry.get("rpc_concurrency")
        if concurrency is not None and (not isinstance(concurrency, int)
                                        or isinstance(concurrency, bool)
                                        or not 1 <= concurrency <= 64):
            raise ConfigError(f"{where}.rpc_concurrency: {concurrency!r} is not 1..64")
        rate = entry.get("max_rps")
        if rate is not None and (not isinstance(rate, int | float) or isinstance(rate, bool)
                                 or rate <= 0):
            raise ConfigError(f"{where}.max_rps: {rate!r} is not a number above 0")
        followed.append(FollowedChain(rpc, venues, config, concurrency,
                                      None if rate is None else float(rate)))
    slugs = [c.config.chain.slug for c in followed]
    if len(set(slugs)) < len(slugs):
        raise ConfigError(f"chains: the slug {next(s for s in slugs if slugs.count(s) > 1)!r} "
                          "is named twice")
    return ChainsConfig(tuple(followed), hermes)


def address(value: Any, where: str) -> str:
    """An EVM address as the lake keeps it: lower-case with 0x."""
    if not isinstance(value, str) or not ADDRESS.match(value):
        raise ConfigError(f"{where}: {value!r} is not an EVM address (20 bytes of hex)")
    return "0x" + value.lower().removeprefix("0x")


def _mapping(value: Any, where: str, required: set[str],
             optional: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of {', '.join(sorted(required))}")
    unknown = sorted(set(value) - required - set(optional))
    if unknown:
        allowed = ", ".join(sorted(required | set(optional)))
        raise ConfigError(f"{_key(where, unknown[0])}: unknown key (known: {allowed})")
    missing = sorted(required - set(value))
    if missing:
        raise ConfigError(f"{_key(where, missing[0])}: missing")
    return value


def _key(where: str, key: str) -> str:
    return key if where == "the file" else f"{where}.{key}"


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: expected a list of at least one entry")
    return value


def _text(mapping: dict[str, Any], key: str, where: str) -> str:
    value = mapping[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}.{key}: expected a non-empty string")
    return value
