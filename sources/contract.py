"""The raw lake contract: one pandera model per raw table (see docs/lake.md)."""


import pandera.polars as pa
import polars as pl

from core.columns import Raw, Strings, Timestamp, raw, strings, ts
from core.vocabulary import OWNER_POWERS, OWNER_SOURCES

ADDRESS_FORMATS = ["evm", "base58", "base58check", "hex32"]
VENUE_CATEGORIES = ["dex", "launchpad", "perps", "aggregator"]
HONEYPOT_TESTS = ["pass", "fail", "untested"]


class Strict(pa.DataFrameModel):
    """Base: every raw table is strict (no extra or missing columns) and type-exact."""

    class Config:
        strict = True
        coerce = False


class Chain(Strict):
    chain_id: int = pa.Field(gt=0)
    slug: str = pa.Field(str_matches=r"^[a-z0-9-]{1,32}$")
    display_name: str
    address_format: str = pa.Field(isin=ADDRESS_FORMATS)
    explorer_url: str = pa.Field(str_startswith="https://")
    native_symbol: str
    native_token: str
    block_time_ms: int = pa.Field(gt=0)
    min_liquidity_usd: float = pa.Field(ge=0)

    class Config:
        unique = ["chain_id"]


class Venue(Strict):
    chain_id: int
    venue_id: str
    name: str
    category: str = pa.Field(isin=VENUE_CATEGORIES)
    factory: str
    factory_type: str
    router: str

    class Config:
        unique = ["chain_id", "factory"]


class Head(Strict):
    chain_id: int
    observed_at: Timestamp = ts()
    indexed_block: int = pa.Field(ge=0)
    indexed_block_time: Timestamp = ts()
    head_block: int = pa.Field(ge=0)
    head_block_time: Timestamp = ts()

    @pa.dataframe_check

    @classmethod
    def head_not_behind_index(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("head_block") >= pl.col("indexed_block"))


class Block(Strict):
    chain_id: int
    block_number: int = pa.Field(ge=0)
    block_time: Timestamp = ts()
    log_count: int = pa.Field(gt=0)

    class Config:
        unique = ["chain_id", "block_number"]


class Token(Strict):
    chain_id: int
    address: str
    symbol: str
    name: str
    decimals: int = pa.Field(ge=0, le=36)
    total_supply_raw: Raw = raw(ge=0)
    max_supply_raw: Raw | None = raw(nullable=True)
    circulating_supply_raw: Raw | None = raw(nullable=True)
    deployer: str
    deploy_tx: str = pa.Field(str_length={"min_value": 1})
    deploy_block: int = pa.Field(ge=1)
    deployed_at: Timestamp = ts()
    # Null where nothing measured them (a real lake reads no source code and no taxes yet).
    contract_verified: bool | None = pa.Field(nullable=True)
    buy_tax: float | None = pa.Field(nullable=True, ge=0, le=1)
    sell_tax: float | None = pa.Field(nullable=True, ge=0, le=1)
    honeypot_test: str = pa.Field(isin=HONEYPOT_TESTS)
    status: int = pa.Field(ge=0)
    is_quote: bool
    price_feed_id: str | None = pa.Field(nullable=True, str_matches=r"^[0-9a-f]{64}$")
    categories: Strings = strings()
    # The owner-only powers its code holds (docs/lake.md); null where no code was read.
    owner_powers: Strings | None = strings(nullable=True)
    observed_at: Timestamp = ts()

    class Config:
        unique = ["chain_id", "address"]

    @pa.dataframe_check

    @classmethod
    def owner_powers_are_named(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("owner_powers").fill_null([]).list.eval(
            pl.element().is_in(OWNER_POWERS)).list.all())

    @pa.dataframe_check

    @classmethod
    def quote_tokens_have_a_feed(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(~pl.col("is_quote") | pl.col("price_feed_id").is_not_null())


class TokenRegistryEntry(Strict):
    token_id: str = pa.Field(str_matches=r"^[0-9a-f-]{36}$")
    slug: str
    symbol: str
    name: str
    category: str
    rank: int = pa.Field(ge=1)
    confidence: int = pa.Field(ge=0, le=100)
    logo_url: str
    description: str
    status: str

    class Config:
        unique = ["token_id"]


class TokenInstance(Strict):
    instance_id: str = pa.Field(str_matches=r"^[0-9a-f-]{36}$")
    token_id: str
    chain_id: int
    address: str

    class Config:
        unique = ["token_id", "chain_id"]


class TokenProfile(Strict):
    chain_id: int
    address: str
    image_url: str | None = pa.Field(nullable=True)
    websites: Strings = strings()
    twitter: Strings = strings()
    telegram: Strings = strings()
    discord: Strings = strings()
    github: Strings = strings()
    docs: Strings = strings()
    verification_tier: str = pa.Field(isin=["none", "basic", "verified", "premium"])
    verified_by: Strings = strings()
    updated_at: Timestamp = ts()

    class Config:
        unique = ["chain_id", "address"]


class Pair(Strict):
    chain_id: int
    address: str
    factory: str
    factory_type: str
    token0: str
    token1: str
    fee_bps: int = pa.Field(ge=0, le=10_000)
    created_block: int = pa.Field(ge=0)
    created_log_index: int = pa.Field(ge=0)
    created_tx: str
    created_at: Timestamp = ts()
    creator: str
    launchpad: str | None = pa.Field(nullable=True)
    launchpad_stage: str | None = pa.Field(nullable=True, isin=["curve", "completed", "migrated"])
    launchpad_completed_at: Timestamp | None = ts(nullable=True)
    migrated_pool: str | None = pa.Field(nullable=True)
    # A bonding curve's graduation: the quote reserve at which it completes (null elsewhere,
    # and where the launchpad's rule is not read).
    graduation_quote_raw: Raw | None = raw(nullable=True, gt=0)
    lp_token_symbol: str
    is_perp: bool

    class Config:
        unique = ["chain_id", "address"]

    @pa.dataframe_check

    @classmethod
    def two_distinct_tokens(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("token0") != pl.col("token1"))


class _Event(Strict):
    chain_id: int
    block_number: int = pa.Field(ge=0)
    log_index: int = pa.Field(ge=0)
    block_time: Timestamp = ts()

    class Config:
        unique = ["chain_id", "block_number", "log_index"]


class Swap(_Event):
    tx_hash: str
    pair: str
    maker: str
    sender: str
    recipient: str
    amount0_in: Raw = raw(ge=0)
    amount1_in: Raw = raw(ge=0)
    amount0_out: Raw = raw(ge=0)
    amount1_out: Raw = raw(ge=0)
    gas_used: int = pa.Field(gt=0)
    tx_fee_raw: Raw | None = raw(nullable=True, ge=0)

    @pa.dataframe_check

    @classmethod
    def one_token_in_the_other_out(cls, data) -> pl.LazyFrame:
        zero = pl.lit(0).cast(pl.Decimal(38, 0))
        a0i, a1i = pl.col("amount0_in") > zero, pl.col("amount1_in") > zero
        a0o, a1o = pl.col("amount0_out") > zero, pl.col("amount1_out") > zero
        return data.lazyframe.select((a1i & a0o & ~a0i & ~a1o) | (a0i & a1o & ~a1i & ~a0o))


class LiquidityEvent(_Event):
    tx_hash: str
    pair: str
    kind: str = pa.Field(isin=["mint", "burn"])
    owner: str
    amount0: Raw = raw(ge=0)
    amount1: Raw = raw(ge=0)
    liquidity: Raw = raw(gt=0)


class Reserve(_Event):
    tx_hash: str
    pair: str
    reserve0: Raw = raw(ge=0)
    reserve1: Raw = raw(ge=0)


class Transfer(_Event):
    tx_hash: str
    token: str
    from_address: str
    to_address: str
    amount: Raw = raw(gt=0)


class Ownership(Strict):
    """A token's owner: set by an `OwnershipTransferred` log, or read (`owner()`) at the end of
    a block, after its logs (`log_index` null; owner null when `owner()` is not answered)."""

    chain_id: int
    token: str
    block_number: int = pa.Field(ge=0)
    log_index: int | None = pa.Field(nullable=True, ge=0)
    block_time: Timestamp = ts()
    tx_hash: str
    previous_owner: str | None = pa.Field(nullable=True)
    owner: str | None = pa.Field(nullable=True)
    source: str = pa.Field(isin=OWNER_SOURCES)

    class Config:
        unique = ["chain_id", "token", "block_number", "log_index"]

    @pa.dataframe_check

    @classmethod
    def events_have_a_log_and_an_owner(cls, data) -> pl.LazyFrame:
        event = pl.col("source") == "event"
        return data.lazyframe.select(
            event == (pl.col("log_index").is_not_null() & pl.col("owner").is_not_null()
                      & pl.col("previous_owner").is_not_null()))


class TokenTax(Strict):
    """A run of a token's swaps measuring the same tax on one side (docs/market.md, "Taxes"):
    the first swap's place, how many, and the last one's block and time."""

    chain_id: int
    token: str
    side: str = pa.Field(isin=["buy", "sell"])
    tax: float = pa.Field(ge=0, le=1)
    swaps: int = pa.Field(gt=0)
    block_number: int = pa.Field(ge=0)
    log_index: int = pa.Field(ge=0)
    block_time: Timestamp = ts()
    last_block: int = pa.Field(ge=0)
    last_time: Timestamp = ts()

    class Config:
        unique = ["chain_id", "token", "side", "block_number", "log_index"]

    @pa.dataframe_check

    @classmethod
    def a_run_ends_where_it_began_or_after(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("last_block") >= pl.col("block_number"))
                                     & (pl.col("last_time") >= pl.col("block_time")))


class HoneypotTest(Strict):
    """A honeypot test of a token at the end of a block: a buy and a sell simulated on the node
    through `pair` (docs/market.md, "Honeypot test")."""

    chain_id: int
    token: str
    pair: str
    block_number: int = pa.Field(ge=0)
    block_time: Timestamp = ts()
    result: str = pa.Field(isin=["pass", "fail"])
    buy_tax: float | None = pa.Field(nullable=True, ge=0, le=1)
    sell_tax: float | None = pa.Field(nullable=True, ge=0, le=1)
    failed_step: str | None = pa.Field(nullable=True, isin=["buy", "sell transfer", "sell swap"])

    class Config:
        unique = ["chain_id", "token", "block_number"]


class LpLock(Strict):
    chain_id: int
    pair: str
    kind: str = pa.Field(isin=["lock", "burn"])
    provider: str | None = pa.Field(nullable=True)
    locker_address: str
    owner: str
    amount: Raw = raw(gt=0)
    locked_at: Timestamp = ts()
    unlock_at: Timestamp | None = ts(nullable=True)
    tx_hash: str
    block_number: int = pa.Field(ge=0)

    class Config:
        unique = ["chain_id", "tx_hash"]

    @pa.dataframe_check

    @classmethod
    def burns_never_unlock(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("kind") == "lock") | pl.col("unlock_at").is_null())


class AddressLabel(Strict):
    chain_id: int
    address: str
    kind: int = pa.Field(ge=1)
    name: str
    confidence: float = pa.Field(ge=0, le=1)
    token_address: str | None = pa.Field(nullable=True)
    source: str

    class Config:
        unique = ["chain_id", "address", "kind"]


class FarmObservation(Strict):
    chain_id: int
    farm_address: str
    pid: int = pa.Field(ge=0)
    lp_token: str
    reward_token: str
    reward_per_second_raw: Raw = raw(ge=0)
    staked_raw: Raw = raw(ge=0)
    factory: str
    verified: bool
    observed_at: Timestamp = ts()

    class Config:
        unique = ["chain_id", "farm_address", "pid", "observed_at"]


class PerpMarket(Strict):
    chain_id: int
    market: str
    venue_id: str
    symbol: str
    base_feed_id: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    max_leverage: float = pa.Field(ge=1)
    only_isolated: bool
    listed_at: Timestamp = ts()

    class Config:
        unique = ["chain_id", "market"]


class PerpSnapshot(Strict):
    chain_id: int
    market: str
    observed_at: Timestamp = ts()
    mark_price: float = pa.Field(gt=0)
    oracle_price: float = pa.Field(gt=0)
    oi_long_usd: float | None = pa.Field(nullable=True, ge=0)
    oi_short_usd: float | None = pa.Field(nullable=True, ge=0)
    funding_long_1h: float
    funding_short_1h: float
    borrow_long_1h: float = pa.Field(ge=0)
    borrow_short_1h: float = pa.Field(ge=0)
    volume_usd: float = pa.Field(ge=0)

    class Config:
        unique = ["chain_id", "market", "observed_at"]

    @pa.dataframe_check

    @classmethod
    def open_interest_observed_on_both_sides_or_neither(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("oi_long_usd").is_null() == pl.col("oi_short_usd").is_null()
        )


class Liquidation(_Event):
    tx_hash: str
    market: str
    side: str = pa.Field(isin=["long", "short"])
    size_usd: float = pa.Field(gt=0)
    price: float = pa.Field(gt=0)


class LiquidationHeartbeat(Strict):
    chain_id: int
    observed_at: Timestamp = ts()

    class Config:
        unique = ["chain_id", "observed_at"]


# Where an oracle feed's updates come from: the simulator's price process (its lake alone), a
# Chainlink aggregator's rounds, a Hermes upstream, a peg held by the venues file, or a token's
# most liquid priced pool (docs/ingest.md, "Prices").
ORACLE_SOURCES = ("simulator", "chainlink", "hermes", "peg", "derived")


class OracleFeed(Strict):
    feed_id: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    compatible_id: str | None = pa.Field(nullable=True, str_matches=r"^[0-9a-f]{64}$")
    symbol: str
    asset_type: str
    base: str
    quote_currency: str
    description: str
    display_symbol: str
    generic_symbol: str
    schedule: str
    min_channel: str
    expo: int = pa.Field(le=0)
    source: str = pa.Field(isin=list(ORACLE_SOURCES))

    class Config:
        unique = ["feed_id"]


class OracleUpdate(Strict):
    feed_id: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    publish_time: int = pa.Field(gt=0)
    price: int
    conf: int = pa.Field(ge=0)
    expo: int = pa.Field(le=0)
    ema_price: int
    ema_conf: int = pa.Field(ge=0)
    slot: int = pa.Field(ge=0)
    prev_publish_time: int = pa.Field(gt=0)
    source: str = pa.Field(isin=list(ORACLE_SOURCES))

    class Config:
        unique = ["feed_id", "publish_time"]

    @pa.dataframe_check

    @classmethod
    def previous_publish_time_is_earlier(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("prev_publish_time") <= pl.col("publish_time"))


def traded_before_deployed(tokens: pl.DataFrame, pairs: pl.DataFrame,
                           swaps: pl.DataFrame) -> pl.DataFrame:
    """Pairs created, or first traded, before one of their tokens was deployed: a token cannot
    be pooled or traded before the transaction that made it."""
    deployed = tokens.select("chain_id", "address", "deployed_at")
    first = swaps.group_by("chain_id", "pair").agg(first_swap_at=pl.col("block_time").min())
    legs = pl.concat([pairs.select("chain_id", "created_at", pair="address", token=side)
                      for side in ("token0", "token1")])
    return (legs.join(deployed, left_on=["chain_id", "token"], right_on=["chain_id", "address"])
            .join(first, on=["chain_id", "pair"], how="left")
            .filter((pl.col("created_at") < pl.col("deployed_at"))
                    | (pl.col("first_swap_at") < pl.col("deployed_at")))
            .select("chain_id", "pair", "token", "deployed_at", "created_at", "first_swap_at"))
