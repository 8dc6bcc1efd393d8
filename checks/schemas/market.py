"""The pair row (spec 2.3): schema of record and the meaning rules of 2.3 and section 3."""

import pandera.polars as pa
import polars as pl

from checks.schemas.product import ExactProduct, Product
from core.columns import Raw, Timestamp, events_unique, raw, ts
from core.vocabulary import PAIR_WINDOWS, RENOUNCED_OWNERS, TERMINAL_TOKEN_STATUSES
from core.vocabulary import UNKNOWN_TOKEN_ID as ZERO_ID
from sources.contract import traded_before_deployed

VERDICTS = ["ok", "watch", "blocked", "unknown"]
# What the range rule reads of a pair row's tokens.
TOKEN_RANGES = pl.List(pl.Struct({"price_usd": pl.Float64, "price_range": pl.Struct(
    {"low": pl.Float64, "high": pl.Float64})}))
PAIR_STATUSES = ["active", "inactive", "rugged", "unresolved"]


class VerdictRules(Product):
    """The rules pair and token rows share: scam evidence is what blocks, the JSON says the
    verdict the lists filter on, and swaps in the day come from their makers."""

    @pa.dataframe_check

    @classmethod
    def scams_are_blocked(cls, data) -> pl.LazyFrame:
        """A row with scam evidence is blocked, and only such a row."""
        return data.lazyframe.select(pl.col("is_scam") == (pl.col("verdict") == "blocked"))

    @pa.dataframe_check

    @classmethod
    def the_item_carries_the_verdict(cls, data) -> pl.LazyFrame:
        """The wire JSON says the same verdict as the column lists filter on."""
        return data.lazyframe.select(
            pl.col("item").str.json_path_match("$.verdict.status") == pl.col("verdict"))

    @pa.dataframe_check

    @classmethod
    def makers_cover_the_day(cls, data) -> pl.LazyFrame:
        """Swaps in the day come from at least one maker, and never fewer swaps than makers."""
        return data.lazyframe.select(
            (pl.col("txns_h24") >= pl.col("makers_h24"))
            & ((pl.col("txns_h24") == 0) == (pl.col("makers_h24") == 0)))


# What a pair row's window volumes are checked from: each window's volume and its sides'.
WINDOW_VOLUMES = pl.Struct({
    "volume": pl.Struct(dict.fromkeys(PAIR_WINDOWS, pl.Float64)),
    "txn": pl.Struct(dict.fromkeys(PAIR_WINDOWS, pl.Struct(
        {"buy_volume": pl.Float64, "sell_volume": pl.Float64})))})


class PairRow(VerdictRules):
    """One pair: the columns lists and lookups read, and `item`, its wire JSON."""

    chain_id: int = pa.Field(gt=0)
    slug: str
    pair: str = pa.Field(str_length={"min_value": 1, "max_value": 128})
    ticker: str
    base: str
    quote: str
    liquidity_usd: float | None = pa.Field(nullable=True, ge=0)
    volume_h24_usd: float = pa.Field(ge=0)
    txns_h24: int = pa.Field(ge=0)
    makers_h24: int = pa.Field(ge=0)
    price_change_h24: float
    score: int = pa.Field(ge=0, le=100)
    verdict: str = pa.Field(isin=VERDICTS)
    status: str = pa.Field(isin=PAIR_STATUSES)
    is_perp: bool
    launchpad: str | None = pa.Field(nullable=True)
    launchpad_stage: str | None = pa.Field(nullable=True)
    curve_progress: float | None = pa.Field(nullable=True, ge=0, le=1)
    is_scam: bool
    item: str = pa.Field(str_startswith='{"network":')

    class Config:
        unique = ["chain_id", "pair"]

    @pa.dataframe_check

    @classmethod
    def a_graduated_curve_is_all_the_way(cls, data) -> pl.LazyFrame:
        """A curve's progress only on a launchpad's pair, and whole once it completed or
        migrated."""
        progress = pl.col("curve_progress")
        done = pl.col("launchpad_stage").is_in(["completed", "migrated"]).fill_null(False)
        return data.lazyframe.select(
            (progress.is_null() | pl.col("launchpad").is_not_null())
            & (~done | (progress == 1.0)))

    @pa.dataframe_check

    @classmethod
    def token_prices_lie_in_their_ranges(cls, data) -> pl.LazyFrame:
        """Each token's 24h price range holds the price the row shows (spec 2.3): a range that
        excludes the current price is wrong by construction."""
        # Each row's tokens are read out of its JSON once, with only the figures the rule needs.
        tokens = pl.col("item").str.json_path_match("$.tokens").str.json_decode(TOKEN_RANGES)
        token = pl.element().struct
        price = token.field("price_usd")
        low, high = (token.field("price_range").struct.field(end) for end in ("low", "high"))
        inside = price.is_null() | ((low <= price) & (high >= price)).fill_null(False)
        return data.lazyframe.select(tokens.list.eval(inside).list.all().fill_null(True))

    @pa.dataframe_check

    @classmethod
    def window_volume_is_buys_plus_sells(cls, data) -> pl.LazyFrame:
        """Each window's volume is its buy volume plus its sell volume (spec 2.1), perps' rows
        included (their notional has no taker side: it stays in the perp block)."""
        # Each row's JSON read once, for the figures the rule needs only.
        figures = pl.col("_figures")
        held = []
        for w in PAIR_WINDOWS:
            volume = figures.struct.field("volume").struct.field(w)
            sides = figures.struct.field("txn").struct.field(w)
            both = sides.struct.field("buy_volume") + sides.struct.field("sell_volume")
            held.append(((volume - both).abs() <= 1e-9 * volume.abs().clip(1.0, None))
                        .fill_null(volume.is_null()))
        return data.lazyframe.select(_figures=pl.col("item").str.json_decode(WINDOW_VOLUMES)
                                     ).select(pl.all_horizontal(held))

    @pa.dataframe_check

    @classmethod
    def unresolved_pairs_are_unknown(cls, data) -> pl.LazyFrame:
        """A pair that cannot be priced is `unknown`, never `ok`: ok is not a clearance."""
        return data.lazyframe.select(
            (pl.col("status") != "unresolved") | (pl.col("verdict") == "unknown"))


DECIMAL_TEXT = r"^-?\d+(\.\d+)?$"


class TokenRow(VerdictRules):
    """One token on one chain (spec 2.2): what lists filter and sort on, and its wire JSON."""

    chain_id: int = pa.Field(gt=0)
    slug: str
    address: str = pa.Field(str_length={"min_value": 1, "max_value": 128})
    token_id: str | None = pa.Field(nullable=True)
    symbol: str
    price_usd: float | None = pa.Field(nullable=True, ge=0)
    liquidity_usd: float | None = pa.Field(nullable=True, ge=0)
    volume_h24_usd: float = pa.Field(ge=0)
    txns_h24: int = pa.Field(ge=0)
    makers_h24: int = pa.Field(ge=0)
    holders: int = pa.Field(ge=0)
    top10_pct: float = pa.Field(ge=0, le=100)
    rating_score: int = pa.Field(ge=0, le=100)
    token_status: int = pa.Field(ge=0)
    verdict: str = pa.Field(isin=VERDICTS)
    is_scam: bool
    item: str = pa.Field(str_startswith='{"id":')
    market: str = pa.Field(str_startswith='{"observed_at":')
    instances: str = pa.Field(str_startswith="[{")

    class Config:
        unique = ["chain_id", "address"]

    @pa.dataframe_check

    @classmethod
    def terminal_statuses_are_blocked(cls, data) -> pl.LazyFrame:
        """Statuses 999 and 1000 are terminal: such a token is blocked whatever its score."""
        return data.lazyframe.select(
            ~pl.col("token_status").is_in(TERMINAL_TOKEN_STATUSES) | (pl.col("verdict") == "blocked"))

    @pa.dataframe_check

    @classmethod
    def unresolved_tokens_are_not_ok(cls, data) -> pl.LazyFrame:
        """An unresolved or unpriced token is `unknown` (or `blocked`), never `ok` or `watch`."""
        unresolved = (pl.col("token_status") == 1) | pl.col("price_usd").is_null()
        return data.lazyframe.select(
            ~unresolved | pl.col("verdict").is_in(["unknown", "blocked"]))

    @pa.dataframe_check

    @classmethod
    def zero_id_exactly_when_unknown_to_the_registry(cls, data) -> pl.LazyFrame:
        """The all-zero id is carried exactly by the tokens the registry does not know."""
        return data.lazyframe.select(
            (pl.col("item").str.json_path_match("$.id") == ZERO_ID)
            == pl.col("token_id").is_null())

    @pa.dataframe_check

    @classmethod
    def market_figures_are_decimal_strings(cls, data) -> pl.LazyFrame:
        """Money and supply figures of the market block are plain decimal strings (or null)."""
        price = pl.col("market").str.json_path_match("$.metrics.price_usd")
        return data.lazyframe.select(price.is_null() | price.str.contains(DECIMAL_TEXT))


class RegistryToken(ExactProduct):
    """One token of the canonical registry, served by id and by slug."""

    token_id: str = pa.Field(str_matches=r"^[0-9a-f-]{36}$", ne=ZERO_ID)
    slug: str = pa.Field(str_length={"min_value": 1})
    item: str = pa.Field(str_startswith='{"id":')

    class Config:
        unique = ["token_id"]

    @pa.check("slug")

    @classmethod
    def slugs_are_unique(cls, slug) -> pl.LazyFrame:
        """A slug names one registry token."""
        return slug.lazyframe.select(pl.col(slug.key).is_unique())

    @pa.dataframe_check

    @classmethod
    def the_item_carries_its_id(cls, data) -> pl.LazyFrame:
        """The wire JSON's id is the row's registry id."""
        return data.lazyframe.select(
            pl.col("item").str.json_path_match("$.id") == pl.col("token_id"))


class TokenBasis(Product):
    """What a token's row takes from its contract, the registry, its profile and its holders
    (the part the edge's live rows share): supplies and holdings are never negative."""

    chain_id: int = pa.Field(gt=0)
    address: str = pa.Field(str_length={"min_value": 1, "max_value": 128})
    decimals: int = pa.Field(ge=0)
    total_supply: float | None = pa.Field(nullable=True, ge=0)
    max_supply: float | None = pa.Field(nullable=True, ge=0)
    circulating_supply: float | None = pa.Field(nullable=True, ge=0)
    holders: int | None = pa.Field(nullable=True, ge=0)
    top10: float | None = pa.Field(nullable=True, ge=0)
    token_id: str | None = pa.Field(nullable=True)
    # Taxes (figures.taxes): measured, with how many swaps and since when, or as declared.
    buy_tax: float | None = pa.Field(nullable=True, ge=0, le=1)
    sell_tax: float | None = pa.Field(nullable=True, ge=0, le=1)
    buy_tax_swaps: int | None = pa.Field(nullable=True, ge=1)
    sell_tax_swaps: int | None = pa.Field(nullable=True, ge=1)
    honeypot_result: str | None = pa.Field(nullable=True, isin=["pass", "fail"])
    # Ownership (figures.ownership): null throughout where nothing says who owns the token.
    ownable: bool | None = pa.Field(nullable=True)
    owner: str | None = pa.Field(nullable=True)
    renounced: bool | None = pa.Field(nullable=True)
    owner_risk: bool | None = pa.Field(nullable=True)

    class Config:
        unique = ["chain_id", "address"]

    @pa.dataframe_check

    @classmethod
    def a_measured_tax_says_how_many_swaps_and_since_when(cls, data) -> pl.LazyFrame:
        """A tax measured has its swaps and the time of the first, both or neither; and a
        measure is a tax."""
        return data.lazyframe.select(pl.all_horizontal(
            (pl.col(f"{n}_tax_swaps").is_null() == pl.col(f"{n}_tax_since").is_null())
            & (pl.col(f"{n}_tax_swaps").is_null() | pl.col(f"{n}_tax").is_not_null())
            for n in ("buy", "sell")))

    @pa.dataframe_check

    @classmethod
    def a_token_failing_its_last_test_is_a_honeypot(cls, data) -> pl.LazyFrame:
        """A token's honeypot test says what its last test found, and a failed step is a
        failed test."""
        tested = pl.col("honeypot_result").is_not_null()
        return data.lazyframe.select(
            (~tested | (pl.col("honeypot_test") == pl.col("honeypot_result")))
            & (pl.col("honeypot_failed_step").is_null()
               | (pl.col("honeypot_result") == "fail")))

    @pa.dataframe_check

    @classmethod
    def renounced_means_the_owner_is_gone(cls, data) -> pl.LazyFrame:
        """A token is renounced exactly when its owner is the zero or the dead address; an
        owned token has an owner and a token with none is not ownable."""
        gone = pl.col("owner").is_in(RENOUNCED_OWNERS)
        return data.lazyframe.select(
            (pl.col("renounced").fill_null(False) == gone.fill_null(False))
            & (pl.col("ownable").is_null() | (pl.col("ownable") == pl.col("owner").is_not_null())))

    @pa.dataframe_check

    @classmethod
    def times_follow_the_owner(cls, data) -> pl.LazyFrame:
        """A renouncement's time only on a renounced token, an owner's only on an owned one,
        and never after the token's deployment is before it."""
        renounced, ownable = pl.col("renounced").fill_null(False), pl.col("ownable").fill_null(False)
        return data.lazyframe.select(
            (pl.col("renounced_at").is_null() | renounced)
            & (pl.col("owner_since").is_null() | (ownable & ~renounced))
            & (pl.coalesce("renounced_at", "owner_since").is_null()
               | (pl.coalesce("renounced_at", "owner_since") >= pl.col("deployed_at"))))

    @pa.dataframe_check

    @classmethod
    def an_owner_with_powers_is_a_risk(cls, data) -> pl.LazyFrame:
        """The owner risk is exactly an owner not renounced whose token's code holds an
        owner-only power."""
        held = pl.col("owner_powers").list.len().fill_null(0) > 0
        kept = pl.col("ownable").fill_null(False) & ~pl.col("renounced").fill_null(False)
        return data.lazyframe.select(pl.col("owner_risk").fill_null(False) == (kept & held))


class HolderBalance(ExactProduct):
    """What one address holds of one token: only positive balances are holdings."""

    chain_id: int = pa.Field(gt=0)
    token: str
    holder: str
    balance: float = pa.Field(gt=0)

    class Config:
        unique = ["chain_id", "token", "holder"]


class HolderChange(ExactProduct):
    """What one lake day's moves change of what one address holds of one token (a raw amount,
    exact), or that the address sent the token's supply out in its deploy transaction."""

    chain_id: int = pa.Field(gt=0)
    token: str
    holder: str
    change: Raw = raw()
    minted: bool

    class Config:
        unique = ["chain_id", "token", "holder"]

    @pa.dataframe_check
    @classmethod
    def only_what_changed(cls, data) -> pl.LazyFrame:
        """A row is an amount that changed, or a mint address."""
        return data.lazyframe.select((pl.col("change") != 0) | pl.col("minted"))


class ReserveDay(ExactProduct):
    """One pair's first and last reserves of one lake day (raw amounts, exact); a first day's
    reserves before the day are a row of their own (`earlier`)."""

    chain_id: int = pa.Field(gt=0)
    pair: str
    earlier: bool
    reserve0_first: Raw = raw(ge=0)
    reserve1_first: Raw = raw(ge=0)
    reserve0_last: Raw = raw(ge=0)
    reserve1_last: Raw = raw(ge=0)

    class Config:
        unique = ["chain_id", "pair", "earlier"]


class PairDay(ExactProduct):
    """One pair's first swap of one lake day and its last priced leg (none when no swap of
    the day was priced)."""

    chain_id: int = pa.Field(gt=0)
    pair: str
    first_swap_at: Timestamp = ts()
    last_side: str | None = pa.Field(nullable=True, isin=["buy", "sell"])
    last_price_usd: float | None = pa.Field(nullable=True, gt=0)
    last_trade_at: Timestamp | None = ts(nullable=True)

    class Config:
        unique = ["chain_id", "pair"]

    @pa.dataframe_check
    @classmethod
    def last_is_priced_and_not_before_first(cls, data) -> pl.LazyFrame:
        """A last priced leg has its side, price and time together, none before the first."""
        known = pl.col("last_price_usd").is_not_null()
        return data.lazyframe.select(
            (known == pl.col("last_side").is_not_null())
            & (known == pl.col("last_trade_at").is_not_null())
            & (~known | (pl.col("last_trade_at") >= pl.col("first_swap_at"))))


class PairTrade(Product):
    """What every pair trade (spec 2.7) has: its event's key and amounts."""

    chain_id: int = pa.Field(gt=0)
    pair: str
    block_number: int = pa.Field(ge=0)
    log_index: int = pa.Field(ge=0)
    ts: int = pa.Field(ge=0)
    base_amount: float = pa.Field(ge=0)
    quote_amount: float = pa.Field(ge=0)
    fee_usd: float | None = pa.Field(nullable=True, ge=0)


    @pa.check("log_index")

    @classmethod
    def one_trade_per_event(cls, data) -> bool | pl.LazyFrame:
        """No two trades share a log of one block of one chain."""
        return events_unique(data.lazyframe)


class SwapLeg(PairTrade):
    """A swap from its base token's side: a buy or a sell, and it carries gas; its event
    (chain, block, log) finds its hash, maker, sender and recipient in the lake's swaps."""

    maker_key: pl.Int64
    side: str = pa.Field(isin=["buy", "sell"])
    gas_used: int = pa.Field(gt=0)


class LiquidityTrade(PairTrade):
    """A liquidity event as a pair trade: an add or a remove, with no gas or fee of its own."""

    hash: str
    maker: str
    tx_type: str = pa.Field(isin=["add", "remove"])

    @pa.dataframe_check

    @classmethod
    def carries_no_gas(cls, data) -> pl.LazyFrame:
        """Gas and fees are the swap's; a liquidity trade carries neither."""
        return data.lazyframe.select(pl.col("gas_used").is_null() & pl.col("fee_usd").is_null())


def traded_before_deployed_by_day(tokens: pl.DataFrame, pairs: pl.DataFrame,
                                  days: pl.DataFrame) -> pl.DataFrame:
    """`traded_before_deployed` from each lake day's first swap per pair (`PairDay`): the first
    of a pair's days' firsts is its first swap."""
    return traded_before_deployed(tokens, pairs,
                                  days.select("chain_id", "pair", block_time="first_swap_at"))
