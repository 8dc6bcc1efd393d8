"""Leaderboard rows (spec 2.8): protocol rows per chain and chain rows, each ranked, with its
rank movement, growth and badges; rows the board refuses to rank keep their reason."""

from dataclasses import dataclass
from datetime import datetime

import orjson
import polars as pl

from assets.sql_models import BOARD_PERIODS

PERIODS = tuple(BOARD_PERIODS)
# A board's scam rate is shrunk toward its whole board's by this many pairs' worth of prior.
PRIOR_PAIRS = 20
WASH_DOMINATED = 0.5
SCAM_DOMINATED = 0.5
BOARD_KEY = ["scope", "board", "key"]
# The figures a row sums over its pairs in each period, and those only the current day has.
PERIOD_SUMS = ("volume", "wash_volume", "own_volume", "liquidity")
NOW_SUMS = ("buy_volume", "txns", "quality_liquidity", "hosted_volume")


@dataclass(frozen=True)
class Methodology:
    """The ranking method: its version and the instant it took effect. Comparisons with a
    board before that instant are withheld."""

    version: int
    since: datetime


def row_figures(pairs: pl.DataFrame, buyers: pl.DataFrame) -> pl.DataFrame:
    """Per board row, its pairs' figures summed: protocol rows per chain (named pools only)
    and one row per chain (every pool), with each board's totals beside them."""
    protocols = _sums(pairs.filter(pl.col("row_key").is_not_null()), ["chain_id", "row_key"])
    chains = _sums(pairs, ["chain_id"])
    totals = chains.select("chain_id", *[pl.col(f"{f}_{p}").alias(f"board_{f}_{p}")
                                         for f in ("volume", "liquidity") for p in PERIODS],
                           board_risk=pl.col("scam_pairs") / pl.col("pairs").clip(1))
    everything = chains.select(pl.lit(1).alias("_all"), *[
        pl.col(f"{f}_{p}").sum().alias(f"board_{f}_{p}") for f in ("volume", "liquidity")
        for p in PERIODS], board_risk=pl.col("scam_pairs").sum() / pl.col("pairs").sum().clip(1))
    protocol_rows = (protocols.join(totals, on="chain_id")
                     .with_columns(scope=pl.lit("protocols")).rename({"row_key": "key"}))
    chain_rows = (chains.with_columns(_all=pl.lit(1)).join(everything, on="_all").drop("_all")
                  .with_columns(scope=pl.lit("chains"), key=pl.lit(None, pl.String),
                                display_name=pl.lit(None, pl.String),
                                category=pl.when(pl.col("perp_volume") > pl.col("volume_now") / 2)
                                .then(pl.lit("perps")).otherwise(pl.lit("dex"))))
    rows = pl.concat([protocol_rows, chain_rows.select(protocol_rows.columns)], how="vertical")
    counted = buyers.select("scope", "chain_id", key="row_key", buyers_24h="buyers_now")
    return (rows.join(counted, on=["scope", "chain_id", "key"], how="left", nulls_equal=True)
            .with_columns(pl.col("buyers_24h").fill_null(0)))


def _sums(pairs: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    flag = lambda name: pl.col(name).sum().cast(pl.Int64)  # noqa: E731
    return pairs.group_by(by).agg(
        *[pl.col(f"{f}_{p}").sum() for f in PERIOD_SUMS for p in PERIODS],
        *[pl.col(f"{f}_now").sum().alias(f) for f in NOW_SUMS],
        perp_volume=pl.col("volume_now").filter("is_perp").sum(),
        pairs=pl.len().cast(pl.Int64), tradable_pairs=flag("tradable"), priced_pairs=flag("priced"),
        active_pairs=((pl.col("txns_now") > 0) | (pl.col("is_perp") & (pl.col("volume_now") > 0)))
        .sum().cast(pl.Int64),
        new_pairs_24h=flag("is_new"), scam_pairs=flag("is_scam"),
        infra=pl.col("venue_name").drop_nulls().unique().sort(),
        category=pl.col("category").first(), display_name=pl.col("row_name").first())


def aggregator_rows(venues: pl.DataFrame, routed: pl.DataFrame,
                    template: pl.DataFrame) -> pl.DataFrame:
    """One protocol row per aggregator: it owns no pools, so its figures are zero and the
    volume it routed (counted where it traded) is a dimension; the board leaves it unranked."""
    aggregators = (venues.filter(pl.col("category") == "aggregator")
                   .unique(["chain_id", "venue_id"]).sort("chain_id", "venue_id")
                   .join(routed, on=["chain_id", "venue_id"], how="left")
                   .select("chain_id", key="venue_id", display_name="name",
                           routed_volume=pl.col("routed_volume_now").fill_null(0.0)))
    totals = template.filter(pl.col("scope") == "protocols").select(
        "chain_id", pl.col("^board_.*$")).unique("chain_id")
    zeros = {c: pl.lit(0, template.schema[c]) for c in template.columns
             if template.schema[c].is_numeric() and not c.startswith("board_")
             and c != "chain_id"}
    return (aggregators.join(totals, on="chain_id", how="left")
            .with_columns(scope=pl.lit("protocols"), category=pl.lit("aggregator"),
                          infra=pl.lit([], pl.List(pl.String)), **zeros)
            .select(*template.columns, "routed_volume"))


def share(part: str, whole: str) -> pl.Expr:
    """A ratio that is 0 when there is nothing to share."""
    return pl.when(pl.col(whole) > 0).then(pl.col(part) / pl.col(whole)).otherwise(0.0)


def metrics(rows: pl.DataFrame) -> pl.DataFrame:
    """The spec's metrics from the summed figures."""
    return rows.with_columns(
        volume_24h="volume_now", buy_volume_24h="buy_volume", liquidity="liquidity_now",
        txns_24h="txns", hosted_volume_24h="hosted_volume",
        volume_share=share("volume_now", "board_volume_now"),
        liquidity_share=share("liquidity_now", "board_liquidity_now"),
        capital_efficiency=share("volume_now", "liquidity_now"),
        has_capital_efficiency=pl.col("liquidity_now") > 0,
        risk_rate=share("scam_pairs", "pairs"),
        smoothed_risk=(pl.col("scam_pairs") + PRIOR_PAIRS * pl.col("board_risk"))
        / (pl.col("pairs") + PRIOR_PAIRS),
        wash_rate=share("wash_volume_now", "volume_now"),
        liquidity_coverage=share("quality_liquidity", "liquidity_now"))


def exclusion(period: str, stopped: pl.Expr) -> pl.Expr:
    """Why the board refuses to rank a row in a period, or null: an aggregator only routes; a
    stopped chain's figures end where it stopped; no volume; wash or scams dominate."""
    return (pl.when(pl.col("category") == "aggregator").then(pl.lit("routes_only"))
            .when(stopped).then(pl.lit("not_syncing"))
            .when(pl.col(f"volume_{period}") <= 0).then(pl.lit("no_activity"))
            .when(share(f"wash_volume_{period}", f"volume_{period}") > WASH_DOMINATED)
            .then(pl.lit("wash_dominated"))
            .when(pl.col("smoothed_risk") > SCAM_DOMINATED).then(pl.lit("scam_dominated")))


def ranked(rows: pl.DataFrame, period: str) -> pl.DataFrame:
    """Adds `rank_<period>`: within each board by the period's own volume (neither wash nor
    hosted: hosted volume is shown, never ranked), then liquidity, then key. Null for excluded
    rows."""
    excluded = pl.col(f"excluded_{period}")
    order = rows.sort(f"own_volume_{period}", f"liquidity_{period}", "key",
                      descending=[True, True, False])
    return order.with_columns(pl.when(~excluded).then(
        pl.int_range(1, pl.len() + 1).over("scope", "board", excluded))
        .cast(pl.Int64).alias(f"rank_{period}"))


def growth(period: str, reachable: pl.Expr, method_ok: bool) -> pl.Expr:
    """The growth block against the day ending `period` ago: withheld across a change of
    method, past the lake's history, or without a baseline."""
    volume, liquidity = pl.col(f"volume_{period}"), pl.col(f"liquidity_{period}")
    reason = (pl.when(pl.lit(not method_ok)).then(pl.lit("methodology_changed"))
              .when(~reachable).then(pl.lit("history_too_short"))
              .when((volume <= 0) | (liquidity <= 0)).then(pl.lit("no_baseline"))
              .otherwise(pl.lit("")))
    available = reason == ""
    return pl.struct(
        available=available,
        volume=pl.when(available).then(pl.col("volume_now") / volume - 1.0).otherwise(0.0),
        liquidity=pl.when(available).then(pl.col("liquidity_now") / liquidity - 1.0)
        .otherwise(0.0),
        reason=reason)


def assemble_board(pairs: pl.DataFrame, buyers: pl.DataFrame, routed: pl.DataFrame,
                   venues: pl.DataFrame, chains: pl.DataFrame, history_start: pl.DataFrame,
                   as_of: datetime, method: Methodology) -> pl.DataFrame:
    """The live board: every row of both scopes with its metrics, rank, movement, growth,
    badges and exclusion. `chains` holds the chain records; `history_start` each chain's first
    indexed instant."""
    figures = row_figures(pairs, buyers)
    rows = pl.concat([figures.with_columns(routed_volume=pl.lit(0.0)),
                      aggregator_rows(venues, routed, figures)], how="vertical")
    as_of_s = int(as_of.timestamp())
    since = int(method.since.timestamp())
    reach = {p: pl.col("history_start_s") <= as_of_s - starts
             for p, (_, starts) in BOARD_PERIODS.items()}
    rows = (metrics(rows)
            .join(chains.select("chain_id", "slug", chain_name="display_name",
                                stopped=~pl.col("syncing"), stale="metrics_stale"), on="chain_id")
            .join(history_start, on="chain_id", how="left")
            .with_columns(board=pl.when(pl.col("scope") == "protocols").then("slug"),
                          key=pl.coalesce("key", "slug"),
                          display_name=pl.coalesce("display_name", "chain_name")))
    rows = rows.with_columns(exclusion_reason=exclusion("now", pl.col("stopped")).fill_null(""),
                             excluded_d1=exclusion("d1", pl.col("stopped")).is_not_null())
    rows = rows.with_columns(excluded_now=pl.col("exclusion_reason") != "")
    moved = since <= as_of_s - BOARD_PERIODS["d1"][0]
    rows = ranked(ranked(rows, "now"), "d1").rename({"rank_now": "rank"}).with_columns(
                             growth_24h=growth("d1", reach["d1"], moved),
                             growth_7d=growth("d7", reach["d7"],
                                              since <= as_of_s - BOARD_PERIODS["d7"][0]))
    rows = rows.with_columns(rank_change_24h=pl.when(
        pl.col("growth_24h").struct.field("reason").is_in(["", "no_baseline"])
        & pl.col("rank").is_not_null() & pl.col("rank_d1").is_not_null())
        .then(pl.col("rank_d1") - pl.col("rank")).otherwise(0).cast(pl.Int64),
        data_state=pl.when("stale").then(pl.lit("stale")).otherwise(pl.lit("live")),
        methodology_version=pl.lit(method.version, pl.Int64),
        methodology_since=pl.lit(method.since), as_of=pl.lit(as_of))
    rows = badges(rows).sort("scope", "board", pl.col("rank").is_null(), "rank", "key",
                             nulls_last=True)
    return rows.with_columns(item=pl.Series([board_item(r) for r in rows.iter_rows(named=True)],
                                            dtype=pl.String))


# Badge: (name, the figure the best ranked row of its board holds, a condition on the row).
BADGES = (
    ("top_volume", pl.col("volume_24h"), pl.lit(True)),
    ("top_liquidity", pl.col("liquidity"), pl.lit(True)),
    ("most_efficient", pl.col("capital_efficiency"), pl.col("has_capital_efficiency")),
    ("fastest_growing", pl.col("growth_24h").struct.field("volume"),
     pl.col("growth_24h").struct.field("available")),
)


def badges(rows: pl.DataFrame) -> pl.DataFrame:
    """Each board's best ranked row per badge figure earns it; `no_scams` goes to every
    ranked row with at least five pairs and none of them a scam."""
    board = ["scope", "board"]
    earned = []
    for name, figure, condition in BADGES:
        eligible = pl.col("rank").is_not_null() & condition
        value = pl.when(eligible).then(figure)
        best = value.max().over(board)
        earned.append(pl.when(eligible & (value == best) & (best > 0)).then(pl.lit(name)))
    earned.append(pl.when(pl.col("rank").is_not_null() & (pl.col("pairs") >= 5)
                          & (pl.col("scam_pairs") == 0)).then(pl.lit("no_scams")))
    return rows.with_columns(badges=pl.concat_list(earned).list.drop_nulls())


METRIC_NUMBERS = ("volume_24h", "buy_volume_24h", "liquidity", "quality_liquidity", "volume_share",
                  "liquidity_share", "capital_efficiency", "risk_rate", "smoothed_risk",
                  "wash_rate", "liquidity_coverage", "hosted_volume_24h")
METRIC_INTS = ("pairs", "tradable_pairs", "active_pairs", "priced_pairs", "new_pairs_24h",
               "scam_pairs", "txns_24h", "buyers_24h")


def board_item(row: dict) -> str:
    """A board row's JSON (spec 2.8), without the season metrics the publisher adds."""
    return orjson.dumps({
        "key": row["key"], "display_name": row["display_name"], "data_state": row["data_state"],
        "exclusion_reason": row["exclusion_reason"], "category": row["category"],
        "infra": row["infra"], "chain": {"slug": row["slug"], "chain_id": row["chain_id"]},
        "rank": row["rank"] or 0, "rank_change_24h": row["rank_change_24h"],
        "badges": row["badges"],
        "dimensions": {"ranked_volume_24h": row["own_volume_now"],
                       "wash_volume_24h": row["wash_volume_now"],
                       "routed_volume_24h": row["routed_volume"]},
        "metrics": {**{m: float(row[m]) for m in METRIC_NUMBERS},
                    **{m: int(row[m]) for m in METRIC_INTS},
                    "has_capital_efficiency": row["has_capital_efficiency"],
                    "growth_24h": row["growth_24h"], "growth_7d": row["growth_7d"]},
    }).decode()
