"""Seasons: fixed windows numbered from an epoch. The running season's board moves with every
run; a closed season's board is computed once, frozen, and never recomputed."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import orjson
import polars as pl

from assets.boards.rows import BOARD_KEY
from core.quotes import prices_at

SEASON_FIGURES = ("volume", "buy_volume", "liquidity_last", "liquidity_peak",
                  "quality_liquidity", "txns", "buyers", "new_pairs")


@dataclass(frozen=True)
class Seasons:
    """Season n covers [epoch + (n - 1) * length, epoch + n * length)."""

    epoch: datetime
    length_days: int

    def number(self, at: datetime) -> int:
        """The season running at an instant."""
        return (at - self.epoch) // timedelta(days=self.length_days) + 1

    def of(self, at: pl.Expr) -> pl.Expr:
        """The season (its number) an instant column falls in."""
        length_us = self.length_days * 86_400 * 1_000_000
        return ((at - pl.lit(self.epoch)).dt.total_microseconds() // length_us + 1).alias("season")

    def window(self, number: int) -> tuple[datetime, datetime]:
        """A season's start (inclusive) and end (exclusive)."""
        start = self.epoch + timedelta(days=self.length_days) * (number - 1)
        return start, start + timedelta(days=self.length_days)


def season_liquidity(closes: pl.DataFrame, pairs: pl.DataFrame, prices: pl.DataFrame,
                     start: datetime, end: datetime) -> pl.DataFrame:
    """Per pair and day of the season up to `end`: its liquidity at the day's close (the last
    reserves on or before that day, priced at that instant)."""
    days = pl.date_range(start.date(), (end - timedelta(microseconds=1)).date(), eager=True)
    instants = [min(datetime.combine(d, datetime.min.time(), UTC) + timedelta(days=1), end)
                for d in days]
    grid = (closes.select("chain_id", "pair").unique()
            .join(pl.DataFrame({"day": days, "close_s": [int(t.timestamp()) for t in instants]}),
                  how="cross").sort("day"))
    held = grid.join_asof(closes.sort("day"), on="day", by=["chain_id", "pair"],
                          check_sortedness=False)
    priced = pl.concat([prices_at(prices.lazy(), ts).collect().with_columns(close_s=pl.lit(ts))
                        for ts in grid["close_s"].unique()])
    b0 = pl.col("base_is_token0")
    quote = pl.when(b0).then("reserve1").otherwise("reserve0").cast(pl.Float64)
    return (held.drop_nulls("reserve0")
            .join(pairs.select("chain_id", "pair", "base_is_token0", "quote_decimals",
                               "quote_feed_id"), on=["chain_id", "pair"])
            .join(priced.rename({"feed_id": "quote_feed_id"}), on=["quote_feed_id", "close_s"],
                  how="left")
            .select("chain_id", "pair", "day", liquidity=2.0 * quote
                    / pl.lit(10.0).pow(pl.col("quote_decimals")) * pl.col("price_usd")))


def season_pair_flows(legs: pl.LazyFrame, perps: pl.LazyFrame, seasons: Seasons,
                      start: datetime, end: datetime) -> pl.DataFrame:
    """Per season from `start` to `end` and pair: its USD volume, buy volume and swaps (perp
    markets: notional)."""
    usd = pl.col("volume_usd").fill_null(0.0)
    swaps = (legs.filter(pl.col("block_time") >= start, pl.col("block_time") < end)
             .group_by(seasons.of(pl.col("block_time")), "chain_id", "pair").agg(
                 volume=usd.sum(), buy_volume=usd.filter(pl.col("side") == "buy").sum(),
                 txns=pl.len().cast(pl.Int64)))
    notional = (perps.filter(pl.col("observed_at") >= start, pl.col("observed_at") < end)
                .group_by(seasons.of(pl.col("observed_at")), "chain_id", pair="market")
                .agg(volume=pl.col("volume_usd").sum())
                .with_columns(buy_volume=pl.lit(0.0), txns=pl.lit(0, pl.Int64)))
    return pl.concat([swaps, notional], how="vertical").collect()


def season_figures(pairs: pl.DataFrame, flows: pl.DataFrame, liquidity: pl.DataFrame,
                   buyers: pl.DataFrame, min_liquidity: pl.DataFrame, start: datetime,
                   end: datetime) -> pl.DataFrame:
    """Per board row (scope, chain_id, row_key): the season metrics of spec 2.8."""
    last_day = liquidity["day"].max()
    per_pair = (pairs.select("chain_id", "pair", "row_key", "is_scam", "created_at")
                .join(flows, on=["chain_id", "pair"], how="left")
                .join(liquidity.filter(pl.col("day") == last_day)
                      .select("chain_id", "pair", last="liquidity"), on=["chain_id", "pair"],
                      how="left")
                .join(min_liquidity, on="chain_id")
                .with_columns(pl.col("volume", "buy_volume", "last").fill_null(0.0),
                              pl.col("txns").fill_null(0),
                              new=(pl.col("created_at") >= start) & (pl.col("created_at") < end),
                              quality=pl.when(~pl.col("is_scam") & (pl.col("last")
                                                                     >= pl.col("min_liquidity_usd")))
                              .then("last").otherwise(0.0)))
    daily = liquidity.join(pairs.select("chain_id", "pair", "row_key"), on=["chain_id", "pair"])

    def rows(by: list[str], scope: str) -> pl.DataFrame:
        summed = per_pair.group_by(by).agg(
            pl.col("volume", "buy_volume").sum(), txns=pl.col("txns").sum().cast(pl.Int64),
            liquidity_last=pl.col("last").sum(), quality_liquidity=pl.col("quality").sum(),
            new_pairs=pl.col("new").sum().cast(pl.Int64))
        peak = (daily.group_by(*by, "day").agg(pl.col("liquidity").sum())
                .group_by(by).agg(liquidity_peak=pl.col("liquidity").max()))
        out = summed.join(peak, on=by, how="left").with_columns(scope=pl.lit(scope))
        return out if "row_key" in by else out.with_columns(row_key=pl.lit(None, pl.String))

    named = rows(["chain_id", "row_key"], "protocols").filter(pl.col("row_key").is_not_null())
    chains = rows(["chain_id"], "chains")
    figures = pl.concat([named, chains.select(named.columns)])
    return (figures.join(buyers, on=["scope", "chain_id", "row_key"], how="left", nulls_equal=True)
            .with_columns(pl.col("liquidity_peak").fill_null(0.0)
                          .clip(lower_bound=pl.col("liquidity_last")),
                          pl.col("buyers").fill_null(0)))


def season_board(live: pl.DataFrame, figures: pl.DataFrame, number: int, start: datetime,
                 end: datetime, as_of: datetime,
                 at_close: pl.DataFrame | None = None) -> pl.DataFrame:
    """One season's board over the live board's rows: ranked by the season's volume, then its
    last liquidity, then key; a row the live board refuses, or with no season volume, stays
    out of the ranking. A closed season's rows carry the metrics of the board as it stood at
    the close (`at_close`, the live board's rows then)."""
    closed = at_close is not None
    if at_close is not None:
        live = live.join(at_close.select(*BOARD_KEY, closing_item="item"), on=BOARD_KEY,
                         how="left")
    rows = (live.select(*BOARD_KEY, "chain_id", "exclusion_reason", "methodology_version", "item",
                        *(["closing_item"] if closed else []))
            .with_columns(row_key=pl.when(pl.col("scope") == "protocols").then("key"))
            .join(figures, on=["scope", "chain_id", "row_key"], how="left", nulls_equal=True)
            .with_columns(*[pl.col(f).fill_null(0) for f in SEASON_FIGURES])
            .with_columns(exclusion_reason=pl.when(
                pl.col("exclusion_reason").is_in(["", "no_activity"]) & (pl.col("volume") <= 0))
                .then(pl.lit("no_activity"))
                .when(pl.col("exclusion_reason") == "no_activity").then(pl.lit(""))
                .otherwise("exclusion_reason")))
    excluded = pl.col("exclusion_reason") != ""
    rows = (rows.sort("volume", "liquidity_last", "key", descending=[True, True, False])
            .with_columns(rank=pl.when(~excluded).then(
                pl.int_range(1, pl.len() + 1).over("scope", "board", excluded)).cast(pl.Int64)))
    items = [season_item(r, closed) for r in rows.iter_rows(named=True)]
    return rows.with_columns(
        item=pl.Series(items, dtype=pl.String), season=pl.lit(number, pl.Int64),
        starts_at=pl.lit(start), ends_at=pl.lit(end), closed=pl.lit(closed),
        computed_at=pl.lit(as_of)).drop("row_key")


def season_item(row: dict, closed: bool) -> str:
    """The live row's JSON re-ranked for the season, with its season metrics; a closed season's
    row is frozen: its `metrics` are the board's at the season's close (all 0 for a row the
    board did not have then), and the `badges` and `dimensions` drawn from the run's rolling
    day are left out."""
    item = orjson.loads(row["item"])
    item.update(rank=row["rank"] or 0, rank_change_24h=0,
                exclusion_reason=row["exclusion_reason"],
                data_state="frozen" if closed else item["data_state"],
                season_metrics=season_metrics(row))
    if closed:
        closing = row["closing_item"]
        metrics = (orjson.loads(closing)["metrics"] if closing is not None
                   else nothing_yet(item["metrics"]))
        item.update(metrics=metrics, badges=[], dimensions={})
    return orjson.dumps(item).decode()


def nothing_yet(metrics: dict) -> dict:
    """A metrics block with every figure 0 and no growth: a row as of before it had any."""
    def zero(value: object) -> object:
        if isinstance(value, dict):  # a growth block
            return {"available": False, "volume": 0.0, "liquidity": 0.0, "reason": "no_baseline"}
        if isinstance(value, bool):
            return False
        return 0 if isinstance(value, int) else 0.0
    return {k: zero(v) for k, v in metrics.items()}


def season_metrics(row: dict) -> dict:
    """The spec's season_metrics block from a row's season figures."""
    return {"volume": row["volume"], "buy_volume": row["buy_volume"],
            "liquidity_last": row["liquidity_last"], "liquidity_peak": row["liquidity_peak"],
            "quality_liquidity": row["quality_liquidity"], "txns": row["txns"],
            "buyers": row["buyers"], "new_pairs": row["new_pairs"]}
