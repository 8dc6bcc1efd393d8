"""Leaderboard products: schemas of record and the board rules of spec 2.8 (one row per pair,
ranks that never read hosted volume, shares that leave exactly the unnamed share, growth and
movement withheld across a change of method, closed seasons frozen)."""

import pandera.polars as pa
import polars as pl

from checks.schemas.product import Product
from core.columns import Timestamp, ts

CATEGORIES = ["dex", "launchpad", "perps", "aggregator"]
EXCLUSIONS = ["", "routes_only", "not_syncing", "no_activity", "wash_dominated",
              "scam_dominated"]
WITHHELD = ["methodology_changed", "history_too_short"]


class BoardPair(Product):
    """What one pair brings to the board."""

    chain_id: int
    pair: str
    row_key: str | None = pa.Field(nullable=True)
    category: str | None = pa.Field(nullable=True, isin=CATEGORIES)
    launchpad: str | None = pa.Field(nullable=True)
    volume_now: float = pa.Field(ge=0)
    hosted_volume_now: float = pa.Field(ge=0)
    wash_volume_now: float = pa.Field(ge=0)

    class Config:
        unique = ["chain_id", "pair"]

    @pa.dataframe_check

    @classmethod
    def launchpad_pairs_count_for_the_launchpad(cls, data) -> pl.LazyFrame:
        """A pair created on a launchpad counts in the launchpad's row, never the DEX's."""
        pad = pl.col("launchpad").is_not_null()
        return data.lazyframe.select(~pad | ((pl.col("row_key") == pl.col("launchpad"))
                                             & (pl.col("category") == "launchpad")))

    @pa.dataframe_check

    @classmethod
    def parts_within_the_volume(cls, data) -> pl.LazyFrame:
        """Hosted and wash volume are parts of the pair's volume."""
        v = pl.col("volume_now") + 1e-6
        return data.lazyframe.select((pl.col("hosted_volume_now") <= v)
                                     & (pl.col("wash_volume_now") <= v))


class BoardRow(Product):
    """One row of the live board (scope chains, or protocols of one chain)."""

    scope: str = pa.Field(isin=["chains", "protocols"])
    board: str | None = pa.Field(nullable=True)
    key: str
    category: str = pa.Field(isin=CATEGORIES)
    rank: int | None = pa.Field(nullable=True, ge=1)
    rank_change_24h: int
    exclusion_reason: str = pa.Field(isin=EXCLUSIONS)
    data_state: str = pa.Field(isin=["live", "stale"])
    volume_share: float = pa.Field(ge=0, le=1 + 1e-9)
    liquidity_share: float = pa.Field(ge=0, le=1 + 1e-9)
    risk_rate: float = pa.Field(ge=0, le=1)
    wash_rate: float = pa.Field(ge=0, le=1 + 1e-9)
    methodology_since: Timestamp = ts()
    as_of: Timestamp = ts()
    item: str

    class Config:
        unique = ["scope", "board", "key"]

    @pa.dataframe_check

    @classmethod
    def ranked_exactly_when_not_excluded(cls, data) -> pl.LazyFrame:
        """A row has a rank exactly when the board did not refuse it (and gave no reason)."""
        return data.lazyframe.select(pl.col("rank").is_null() == (pl.col("exclusion_reason") != ""))

    @pa.dataframe_check

    @classmethod
    def protocol_rows_on_their_board(cls, data) -> pl.LazyFrame:
        """Protocol rows belong to their chain's board; chain rows to the one board of chains."""
        return data.lazyframe.select(pl.when(pl.col("scope") == "protocols")
                                     .then(pl.col("board") == pl.col("slug"))
                                     .otherwise(pl.col("board").is_null()))

    @pa.dataframe_check

    @classmethod
    def rank_follows_own_volume(cls, data) -> pl.LazyFrame:
        """Ranks run 1..n within a board in order of own volume (neither wash nor hosted:
        hosted volume is shown, never ranked)."""
        ranked = (data.lazyframe.filter(pl.col("rank").is_not_null())
                  .sort("scope", "board", "rank", nulls_last=True))
        board = ["scope", "board"]
        return ranked.select(
            (pl.col("rank") == pl.int_range(1, pl.len() + 1).over(board))
            & (pl.col("own_volume_now") <= pl.col("own_volume_now").shift(1)
               .over(board).fill_null(float("inf")) + 1e-9))

    @pa.dataframe_check

    @classmethod
    def growth_withheld_across_a_method_change(cls, data) -> pl.LazyFrame:
        """When the ranking method changed within a growth window, that growth (and, for the
        day, rank movement) is withheld with the reason."""
        def withheld(block: str, days: int) -> pl.Expr:
            changed = pl.col("methodology_since") > pl.col("as_of") - pl.duration(days=days)
            growth = pl.col(block)
            return ~changed | (~growth.struct.field("available")
                               & (growth.struct.field("reason") == "methodology_changed"))
        return data.lazyframe.select(withheld("growth_24h", 1) & withheld("growth_7d", 7)
                                     & ((pl.col("rank_change_24h") == 0)
                                        | ~pl.col("growth_24h").struct.field("reason")
                                        .is_in(WITHHELD)))

    @pa.dataframe_check

    @classmethod
    def growth_available_without_reason(cls, data) -> pl.LazyFrame:
        """Available growth has no reason; withheld growth has one and shows zeros."""
        def ok(block: str) -> pl.Expr:
            g = pl.col(block)
            return pl.when(g.struct.field("available")).then(g.struct.field("reason") == "").otherwise(
                (g.struct.field("reason") != "") & (g.struct.field("volume") == 0)
                & (g.struct.field("liquidity") == 0))
        return data.lazyframe.select(ok("growth_24h") & ok("growth_7d"))


def shares_leave_the_unnamed(rows: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """Per chain's protocol board: the rows whose shares do not sum to one less exactly the
    share of pools nobody can name (recomputed from the pairs), in volume and in liquidity."""
    totals = pairs.group_by("chain_id").agg(
        volume=pl.col("volume_now").sum(), liquidity=pl.col("liquidity_now").sum(),
        unnamed_volume=pl.col("volume_now").filter(pl.col("row_key").is_null()).sum(),
        unnamed_liquidity=pl.col("liquidity_now").filter(pl.col("row_key").is_null()).sum())
    named = (rows.filter(pl.col("scope") == "protocols").group_by("chain_id")
             .agg(pl.col("volume_share", "liquidity_share").sum()))
    def broken(figure: str) -> pl.Expr:
        whole = pl.col(figure)
        unnamed_share = pl.col(f"unnamed_{figure}") / whole
        return (whole > 0) & ((pl.col(f"{figure}_share") - (1.0 - unnamed_share)).abs() > 1e-9)

    return (totals.join(named, on="chain_id", how="left")
            .with_columns(pl.col("volume_share", "liquidity_share").fill_null(0.0))
            .filter(broken("volume") | broken("liquidity")))


class SeasonBoardRow(Product):
    """One row of a season's board."""

    season: int = pa.Field(ge=1)
    scope: str = pa.Field(isin=["chains", "protocols"])
    key: str
    closed: bool
    rank: int | None = pa.Field(nullable=True, ge=1)
    exclusion_reason: str = pa.Field(isin=EXCLUSIONS)
    volume: float = pa.Field(ge=0)
    liquidity_last: float = pa.Field(ge=0)
    liquidity_peak: float = pa.Field(ge=0)
    starts_at: Timestamp = ts()
    ends_at: Timestamp = ts()
    computed_at: Timestamp = ts()
    item: str

    class Config:
        unique = ["season", "scope", "board", "key"]

    @pa.dataframe_check

    @classmethod
    def peak_at_least_last(cls, data) -> pl.LazyFrame:
        """The season's peak liquidity is never below its last."""
        return data.lazyframe.select(pl.col("liquidity_peak") >= pl.col("liquidity_last") - 1e-6)

    @pa.dataframe_check

    @classmethod
    def closed_means_ended(cls, data) -> pl.LazyFrame:
        """A season is closed exactly when it had ended when its board was computed."""
        return data.lazyframe.select(pl.col("closed") == (pl.col("ends_at") <= pl.col("computed_at")))

    @pa.dataframe_check

    @classmethod
    def closed_rows_are_frozen(cls, data) -> pl.LazyFrame:
        """A closed season's rows say so."""
        state = pl.col("item").str.json_path_match("$.data_state")
        return data.lazyframe.select(~pl.col("closed") | (state == "frozen"))

    @pa.dataframe_check

    @classmethod
    def closed_rows_carry_figures_as_of_the_close(cls, data) -> pl.LazyFrame:
        """A closed season is frozen: its rows carry the season's figures and the metrics of
        the board at the season's close (an object, spec 2.8), never the badges or dimensions
        of whatever run computed them."""
        item = pl.col("item")
        frozen = (frozen_metrics()
                  & item.str.json_path_match("$.badges[0]").is_null()
                  & ~item.str.contains('"dimensions":{"', literal=True))
        return data.lazyframe.select(~pl.col("closed") | frozen)


def frozen_metrics() -> pl.Expr:
    """Whether a season row's `item` carries its metrics (a closed season's, as of its close)."""
    return pl.col("item").str.json_path_match("$.metrics.volume_24h").is_not_null()


def closed_seasons_changed(before: pl.DataFrame, now: pl.DataFrame) -> pl.DataFrame:
    """Rows of seasons closed in the previous product that the new one lost or changed (a
    season frozen without its metrics at the close, as products before them were, is frozen
    again with them)."""
    if before.is_empty():
        return before
    frozen = before.filter("closed", frozen_metrics())
    columns = ["season", "scope", "board", "key", "rank", "item", "computed_at"]
    return frozen.select(columns).join(now.select(columns), on=columns, how="anti",
                                       nulls_equal=True)
