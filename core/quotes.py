"""The oracle's USD prices as the products read them (`quote_prices`: feed, unix second,
price): a feed's price at an instant and its change over every pair window."""

from datetime import datetime

import polars as pl

from core.vocabulary import PAIR_WINDOWS


def prices_at(prices: pl.LazyFrame, ts: int) -> pl.LazyFrame:
    """Each price feed's latest USD price at or before unix second `ts`."""
    return (prices.filter(pl.col("ts") <= ts)
            .group_by("feed_id").agg(pl.col("price_usd").sort_by("ts").last()))


def oracle_changes(prices: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per price feed: the USD price at `as_of` and its percent change over every window."""
    end = int(as_of.timestamp())
    now = prices_at(prices, end).rename({"price_usd": "oracle_usd"})
    for w, seconds in PAIR_WINDOWS.items():
        then = prices_at(prices, end - seconds).rename({"price_usd": f"oracle_{w}"})
        now = now.join(then, on="feed_id", how="left")
    return now.select("feed_id", "oracle_usd", **{
        f"oracle_change_{w}": pl.when(pl.col(f"oracle_{w}") > 0).then(
            (pl.col("oracle_usd") / pl.col(f"oracle_{w}") - 1.0) * 100.0).otherwise(0.0)
        for w in PAIR_WINDOWS})
