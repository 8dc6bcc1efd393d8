"""Perpetual markets: the list with each market's perp block, history points at 5 minutes and
an hour, and liquidations per UTC day."""

from datetime import datetime, timedelta

import orjson
import polars as pl

from core.vocabulary import WIRE_TIME
from figures.pair_rows import perp_blocks

MARKET = ["chain_id", "market"]
RATES = ("funding_long_1h", "funding_short_1h", "borrow_long_1h", "borrow_short_1h")
# The liquidation feed beats every 5 minutes: silent for longer than this, it has stopped.
FEED_SILENT_AFTER = timedelta(minutes=15)


def history_points(snapshots: pl.LazyFrame, as_of: datetime) -> pl.DataFrame:
    """History points at `5m` (each observation) and `1h` (per hour: the last prices and open
    interest observed in it, the mean rates). Open interest nobody observed stays null and
    `oi_known` false, never zero."""
    seen = snapshots.filter(pl.col("observed_at") <= as_of)
    five = seen.select(*MARKET, "observed_at", "mark_price", "oracle_price", "oi_long_usd",
                       "oi_short_usd", *RATES).with_columns(interval=pl.lit("5m"))
    hourly = (seen.sort("observed_at")
              .group_by(*MARKET, pl.col("observed_at").dt.truncate("1h"))
              .agg(pl.col("mark_price", "oracle_price").last(),
                   pl.col("oi_long_usd", "oi_short_usd").drop_nulls().last(),
                   *[pl.col(r).mean() for r in RATES])
              .with_columns(interval=pl.lit("1h")))
    points = pl.concat([five, hourly.select(five.collect_schema().names())], how="vertical")
    oi = pl.col("oi_long_usd") + pl.col("oi_short_usd")
    return (points.with_columns(
        premium=pl.col("mark_price") / pl.col("oracle_price") - 1.0, oi_usd=oi,
        oi_known=oi.is_not_null())
        .select(*MARKET, "interval", "observed_at", "mark_price", "oracle_price", "premium",
                "oi_usd", "oi_long_usd", "oi_short_usd", *RATES, "oi_known")
        .sort(*MARKET, "interval", "observed_at").collect())


def daily_liquidations(liquidations: pl.LazyFrame, beats: pl.LazyFrame,
                     as_of: datetime) -> pl.DataFrame:
    """Per chain, market (null: the whole venue) and UTC day the feed was alive: liquidated USD
    by side, the largest one and counts; a day with none is a zero, a day after the feed
    stopped is absent. `stale` marks a chain whose feed has stopped."""
    alive = (beats.filter(pl.col("observed_at") <= as_of).group_by("chain_id")
             .agg(first=pl.col("observed_at").min(), last=pl.col("observed_at").max()).collect())
    days = (alive.with_columns(day=pl.date_ranges(pl.col("first").dt.date(), pl.col("last").dt.date()))
            .explode("day").with_columns(stale=pl.col("last") < pl.lit(as_of) - FEED_SILENT_AFTER)
            .select("chain_id", "day", "stale"))
    seen = (liquidations.filter(pl.col("block_time") <= as_of)
            .with_columns(day=pl.col("block_time").dt.date()).collect())
    markets = seen.select("chain_id", "market").unique()

    def sums(by: list[str]) -> pl.DataFrame:
        long, short = pl.col("side") == "long", pl.col("side") == "short"
        return seen.group_by(by).agg(
            liquidated_long_usd=pl.col("size_usd").filter(long).sum(),
            liquidated_short_usd=pl.col("size_usd").filter(short).sum(),
            max_liquidation_usd=pl.col("size_usd").max(),
            long_count=long.sum().cast(pl.Int64), short_count=short.sum().cast(pl.Int64))

    per_market = days.join(markets, on="chain_id").join(
        sums(["chain_id", "market", "day"]), on=["chain_id", "market", "day"], how="left")
    venue = days.with_columns(market=pl.lit(None, pl.String)).join(
        sums(["chain_id", "day"]), on=["chain_id", "day"], how="left")
    return (pl.concat([per_market, venue.select(per_market.columns)], how="vertical")
            .with_columns(pl.col("liquidated_long_usd", "liquidated_short_usd",
                                 "max_liquidation_usd").fill_null(0.0),
                          pl.col("long_count", "short_count").fill_null(0))
            .sort("chain_id", "market", "day", nulls_last=True))


def market_list(markets: pl.LazyFrame, snapshots: pl.LazyFrame, venues: pl.LazyFrame,
              chains: pl.LazyFrame, as_of: datetime) -> pl.DataFrame:
    """One row per perp market: where it trades, its terms and the perp block of its pair row."""
    frame = (markets.join(perp_blocks(markets, snapshots, as_of)
                          .rename({"pair": "market"}), on=MARKET)
             .join(venues.select("chain_id", "venue_id", venue_name="name").unique(),
                   on=["chain_id", "venue_id"], how="left")
             .join(chains.select("chain_id", "slug"), on="chain_id")
             .sort(MARKET).collect())
    items = [orjson.dumps({
        "chain": {"slug": r["slug"], "chain_id": r["chain_id"]}, "pair_address": r["market"],
        "symbol": r["symbol"], "venue": {"id": r["venue_id"], "name": r["venue_name"]},
        "base_feed_id": r["base_feed_id"], "listed_at": r["listed_at"].strftime(WIRE_TIME),
        "perp": r["perp"]}).decode() for r in frame.iter_rows(named=True)]
    return frame.select(*MARKET, "slug", "symbol", "venue_id", "listed_at",
                        item=pl.Series(items, dtype=pl.String))
