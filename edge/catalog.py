"""Every operation of the interface, declared once: method, path, cost in CU, parameters, body.

Routing, validation, metering, /openapi.yml and /llms.txt are all generated from this list.
An operation is mounted when a route module supplies its handler; until then it is declared
but neither routed nor documented.
"""

from core.vocabulary import (
    CAPITAL_TIERS,
    COHORTS,
    RESOLUTIONS,
    SORT_OPTIONS,
    TIMEFRAMES,
    TX_TYPES,
    WALLET_WINDOWS,
)
from edge.web.params import (
    INT32,
    INT64,
    UINT32,
    Body,
    Param,
    choice,
    flag,
    integer,
    listing,
    number,
    path,
    text,
)
from edge.web.registry import Operation

LIMIT = integer("limit", (1, 100), 10, description="Page size (keyless calls get at most 50).")
CURSOR = text("cursor", 512, description="Opaque cursor from next_cursor or prev_cursor.")
PAGE = (LIMIT, CURSOR)
CHAIN = path("chain", 32, description="Chain slug or numeric chain id.")
ADDRESS = path("address", description="Chain-native address; EVM with or without 0x, any case.")
CHAINS = listing("chains", description="Chain slugs or ids; omit for every live chain.")
ORDER = choice("order", ("asc", "desc"), "desc", description="Sort direction.")
WINDOW = choice("window", tuple(WALLET_WINDOWS), "30d", description="Metrics window.")
FROM = integer("from", (0, INT64[1]), description="Unix seconds UTC, inclusive.")
TO = integer("to", (0, INT64[1]), description="Unix seconds UTC, inclusive.")
FEED_ID = r"(0[xX])?[0-9a-fA-F]{64}"
IDS = listing("ids", 100, required=True, pattern=FEED_ID, description="32-byte hex feed ids.")
HERMES_TYPES = ("crypto", "fx", "equity", "metal", "rates", "crypto_redemption_rate",
                "commodities", "crypto_index", "crypto_nav", "eco", "kalshi")
HERMES_IDS = "Feed ids (own or compatible), 0x optional, any case; ids[] and ids count together."
# Every /v2 update route takes the same parameters; those a route does not use are validated
# and ignored there.
UPDATE_PARAMS = (
    Param("ids[]", "repeat", HERMES_IDS, pattern=FEED_ID, max_items=500, min_items=0),
    Param("ids", "repeat", HERMES_IDS, pattern=FEED_ID, max_items=500, min_items=0),
    choice("encoding", ("hex", "base64"), "hex"), flag("parsed", True),
    flag("ignore_invalid_price_ids"),
    choice("channel", ("real_time", "fixed_rate@200ms", "fixed_rate@1000ms"),
           "fixed_rate@1000ms", description="Stream cadence; fixed_rate@50ms is refused."),
    flag("benchmarks_only", description="Stream only the first update of each second."),
    flag("verbose"), flag("binary"), flag("unique", True), flag("allow_unordered"),
)
BY_CHAIN = "/chains/{chain}"


def _usd_range(name: str, unit: str) -> tuple[Param, Param]:
    """min_/max_ bounds in USD: doubles >= 0, inclusive."""
    return (number(f"min_{name}", 0, description=f"{unit}, inclusive."),
            number(f"max_{name}", 0, description=f"{unit}, inclusive."))


def _count_range(name: str, unit: str, high: int = UINT32[1]) -> tuple[Param, Param]:
    """min_/max_ bounds on a count: uint32 up to `high`, inclusive."""
    return (integer(f"min_{name}", (0, high), description=f"{unit}, inclusive."),
            integer(f"max_{name}", (0, high), description=f"{unit}, inclusive."))


TOKEN_FILTERS = (
    text("q", 128, description="Token name, ticker or address."), CHAINS,
    listing("categories", description="Category slugs; a token matches when it carries any."),
    choice("sort", ("market_cap", "volume", "liquidity", "price_change", "created_at", "holders",
                    "rating", "fdv", "txns"), "market_cap"),
    ORDER,
    *_usd_range("liquidity_usd", "Liquidity in USD across the token's pairs"),
    *_usd_range("volume_24h_usd", "24h volume in USD"),
    *_usd_range("market_cap_usd", "Market cap in USD"),
    *_usd_range("fdv_usd", "Fully diluted valuation in USD"),
    *_count_range("age_seconds", "Seconds since launch"),
    *_count_range("trust_score", "Trust score", 100),
    *_count_range("holders", "Holders tracked"),
    flag("include_deployments", description="Add the token's deployments on every chain."),
    flag("include_market", description="Add price and market metrics to every item."),
    *PAGE,
)

WALLET_FILTERS = (
    text("chain", 32, min_length=1, required=True), WINDOW,
    choice("sort", ("total_pnl", "realized_pnl", "volume", "win_rate", "trades", "user_score"),
           "total_pnl"),
    ORDER,
    number("min_total_pnl_usd", None), number("min_realized_pnl_usd", None),
    number("min_volume_usd", None), number("min_win_rate", 0, 1),
    integer("min_trades", UINT32), integer("max_avg_hold_seconds", INT64),
    integer("min_user_score", (0, 100)),
    flag("no_abuse_evidence"), flag("only_copy_eligible"),
    flag("exclude_bots", description="Remove bots and market makers."),
    listing("tiers", 8, tuple(CAPITAL_TIERS)), *PAGE,
)

PAIR_REF = {"type": "object", "required": ["chain", "address"], "additionalProperties": False,
            "properties": {"chain": {"type": "string", "minLength": 1, "maxLength": 32},
                           "address": {"type": "string", "minLength": 1, "maxLength": 128}}}


def _op(method: str, route: str, cost: int, domain: str, summary: str, *params: Param,
        body: Body | None = None) -> Operation:
    return Operation(method, route, cost, summary, tuple(params), domain=domain, body=body)


OPERATIONS: list[Operation] = [
    _op("GET", "/key", 0, "platform", "The plan and limits of the calling key (or the keyless tier)"),
    _op("GET", "/status", 0, "platform", "Snapshot age, as_of, per-chain lag and upstream health"),
    _op("GET", "/.well-known/x402", 20, "platform", "The x402 pay-per-call offer"),
    _op("GET", "/chains", 10, "chains", "Chain records, paged", *PAGE),
    _op("GET", "/config", 10, "chains", "Chains and every value a valid request may use"),
    _op("GET", "/tokens", 30, "market", "Token market list", *TOKEN_FILTERS),
    _op("GET", "/tokens/{id}", 20, "market", "A token by its registry id",
        path("id", description="Registry uuid.")),
    _op("GET", "/tokens/by-slug/{slug}", 20, "market", "A token by its registry slug", path("slug")),
    _op("POST", "/tokens/batch", 100, "market", "Tokens by chain and address, up to 50",
        body=Body({"type": "object", "required": ["items"], "properties": {
            "items": {"type": "array", "minItems": 1, "maxItems": 50, "items": PAIR_REF}}})),
    _op("GET", "/trending", 20, "market", "Trending pairs (the /pairs?sort=trending ordering)",
        CHAINS, *PAGE),
    _op("GET", "/pairs", 30, "market", "Pair list in any sort /config lists",
        CHAINS, choice("sort", tuple(SORT_OPTIONS), "trending"),
        choice("timeframe", tuple(TIMEFRAMES), "h24"), ORDER, *PAGE),
    _op("GET", "/pairs/new", 20, "market", "Newest pairs", CHAINS, *PAGE),
    _op("GET", "/pairs/new/stream", 20, "market",
        "A chain's new pairs as Server-Sent Events (resume with Last-Event-ID)",
        text("chain", 32, 1, required=True, description="Chain slug or numeric chain id.")),
    _op("POST", "/pairs/batch", 40, "market", "Pair rows by chain and address, up to 50",
        body=Body({"type": "object", "required": ["items"], "properties": {
            "items": {"type": "array", "minItems": 1, "maxItems": 50, "items": PAIR_REF}}})),
    _op("GET", "/launchpads/tokens", 20, "market", "Tokens on launchpads", CHAINS, *PAGE),
    _op("GET", "/deployers/{address}/tokens", 40, "market", "Tokens a deployer created",
        ADDRESS, CHAINS, *PAGE),
    _op("GET", "/search", 30, "market", "Tokens and pairs by symbol, ticker or address",
        text("q", 128, 1, required=True), CHAINS, integer("limit", (1, 50), 8)),
    _op("GET", BY_CHAIN + "/pairs/{address}", 20, "market", "One pair row", CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/pairs/{address}/candles", 60, "market", "OHLCV candles of a pair",
        CHAIN, ADDRESS, choice("resolution", tuple(RESOLUTIONS), "1h"), FROM, TO),
    _op("GET", BY_CHAIN + "/pairs/{address}/stream", 20, "market",
        "A pair's trades and window updates as Server-Sent Events (resume with Last-Event-ID)",
        CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/pairs/{address}/trades", 40, "market",
        "Swaps and liquidity events of a pair", CHAIN, ADDRESS,
        listing("tx_type", 8, tuple(TX_TYPES)), text("maker", 128, 1), FROM, TO, ORDER, *PAGE),
    _op("GET", BY_CHAIN + "/tokens/{address}", 20, "market", "A token on one chain",
        CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/tokens/{address}/brief", 20, "market",
        "A token's brief in one call (ETag)", CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/tokens/{address}/proof", 20, "market",
        "Merkle proof of a token's verdict", CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/tokens/{address}/verdict", 40, "market",
        "EIP-712 signed verdict of a token", CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/tokens/{address}/pairs", 30, "market", "A token's markets on a chain",
        CHAIN, ADDRESS, *PAGE),
    _op("GET", BY_CHAIN + "/tokens/{address}/holders", 40, "market", "A token's holders",
        CHAIN, ADDRESS, *PAGE),
    _op("GET", BY_CHAIN + "/tokens/{address}/traders", 40, "wallets",
        "Wallets that traded a token, lifetime", CHAIN, ADDRESS,
        choice("sort", ("realized_pnl", "total_pnl", "volume", "trades"), "realized_pnl"),
        choice("cohort", tuple(COHORTS), description="Only the wallets of this cohort "
               "(docs/wallets.md, \"Cohorts\")."), *PAGE),
    _op("GET", BY_CHAIN + "/tokens/{address}/cohorts", 40, "wallets",
        "A token's trader cohorts: snipers, early buyers, deployer, top holders, fresh wallets, "
        "smart money, bots", CHAIN, ADDRESS),
    _op("GET", "/wallets", 50, "wallets", "Wallet rankings", *WALLET_FILTERS),
    _op("GET", "/wallets/stats", 20, "wallets", "Wallet statistics of a chain",
        text("chain", 32, min_length=1, required=True), WINDOW),
    _op("GET", "/wallets/{address}/overview", 60, "wallets", "A wallet across chains",
        ADDRESS, CHAINS, WINDOW),
    _op("POST", "/wallets/labels/batch", 60, "wallets", "Labels of up to 200 addresses",
        body=Body({"type": "object", "required": ["chain", "addresses"], "properties": {
            "chain": {"type": "string", "minLength": 1, "maxLength": 32},
            "addresses": {"type": "array", "minItems": 1, "maxItems": 200,
                          "items": {"type": "string", "minLength": 1, "maxLength": 128}}}})),
    _op("GET", BY_CHAIN + "/wallets/{address}", 30, "wallets", "Wallet profile", CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/wallets/{address}/trades", 40, "wallets", "A wallet's trades",
        CHAIN, ADDRESS, *PAGE),
    _op("GET", BY_CHAIN + "/wallets/{address}/chart", 30, "wallets", "A wallet's PNL chart",
        CHAIN, ADDRESS, WINDOW),
    _op("GET", BY_CHAIN + "/wallets/{address}/positions", 40, "wallets", "A wallet's positions",
        CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/wallets/{address}/rounds", 40, "wallets", "A wallet's round trips",
        CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/wallets/{address}/funding", 20, "wallets", "Who funded a wallet",
        CHAIN, ADDRESS),
    _op("GET", BY_CHAIN + "/wallets/{address}/best-trades", 30, "wallets",
        "A wallet's best trades", CHAIN, ADDRESS, WINDOW),
    _op("GET", "/leaderboard", 20, "boards", "Chain or protocol leaderboard",
        choice("scope", ("chains", "protocols"), required=True), text("chain", 32, 1), CHAINS,
        flag("seasonal"), integer("season", (0, INT32[1])), integer("limit", (1, 200), 50)),
    _op("GET", "/farms", 30, "farms", "Yield farms",
        listing("chains", 8), text("q", 128, description="Farm ticker substring."),
        listing("factories", 32, description="Only farms deployed by these factories."),
        choice("sort", ("tvl", "apr", "updated_at")), ORDER, *PAGE),
    _op("GET", BY_CHAIN + "/farms/{address}", 20, "farms", "One farm", CHAIN, ADDRESS,
        integer("pid", (0, INT32[1]), description="The farm's pool; default its lowest.")),
    _op("GET", "/perps", 20, "perps", "Perpetual markets", *PAGE),
    _op("GET", "/perps/{market}/history", 30, "perps", "Open interest, funding and prices",
        path("market"), text("chain", 32, 1), FROM, TO, choice("interval", ("5m", "1h"), "1h")),
    _op("GET", "/perps/liquidations", 30, "perps", "Liquidations per UTC day",
        text("chain", 32, 1), text("market", 128, 1), FROM, TO),
    _op("GET", "/prices", 10, "prices", "Latest oracle prices", IDS),
    _op("GET", "/prices/at", 20, "prices", "Oracle prices at a time", IDS,
        integer("ts", (1, INT64[1]), required=True)),
    _op("GET", "/v2/updates/price/latest", 0, "oracle", "Latest price updates (Hermes)",
        *UPDATE_PARAMS),
    _op("GET", "/v2/updates/price/stream", 0, "oracle",
        "Price updates as Server-Sent Events (Hermes)", *UPDATE_PARAMS),
    _op("GET", "/v2/updates/price/{publish_time}", 0, "oracle",
        "Each feed's first update at or after a time (Hermes)",
        Param("publish_time", "int", "Unix seconds UTC.", required=True, location="path",
              minimum=0, maximum=INT64[1]),
        *UPDATE_PARAMS),
    _op("GET", "/v2/price_feeds", 0, "oracle", "Price feed metadata (Hermes)",
        text("query", 128, description="Case-insensitive substring of the feed symbol."),
        choice("asset_type", HERMES_TYPES, description="One asset category.")),
    _op("GET", "/v2/price_feeds/{id}", 0, "oracle", "One price feed (Hermes)",
        path("id", 66, pattern=FEED_ID)),
    _op("GET", "/v1/feeds", 10, "oracle", "Every price feed with its latest price",
        text("query", 128, description="Case-insensitive substring of the feed symbol."),
        choice("asset_type", HERMES_TYPES, description="One asset category.")),
    _op("GET", "/v1/status", 0, "oracle", "The oracle's upstream, freshness and history"),
    _op("GET", "/v1/candles", 30, "oracle", "Open, high, low and close of one feed",
        text("id", 66, 1, required=True, pattern=FEED_ID, description="One feed id."),
        choice("resolution", tuple(RESOLUTIONS), "1h"), FROM, TO),
]
