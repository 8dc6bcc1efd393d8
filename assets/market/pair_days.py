"""Each pair's first swap and last priced swap of each lake day (`pair_days`, made with the
swap legs): what the pair rows' prices need of the days before their windows, and what the
rule that nothing traded before it was deployed reads (`traded_before_deployed_by_day`),
instead of every swap since the first."""

from datetime import datetime, timedelta

import polars as pl

from assets.warehouse import Warehouse
from core.vocabulary import PAIR_WINDOWS

NAME = "pair_days"
KEY = ("chain_id", "pair")
# What the pair rows' prices read of a leg (`core.windows.as_swaps`).
PRICED = ("chain_id", "pair", "side", "volume_usd", "price_usd", "block_time", "maker_key")


def pair_day(swaps: pl.DataFrame, legs: pl.DataFrame) -> pl.DataFrame:
    """A day's first swap per pair (of the lake's swaps, priced or not) and its last priced
    leg, in the order the legs come (the lake's): its side, USD price and time."""
    firsts = swaps.group_by(*KEY).agg(first_swap_at=pl.col("block_time").min())
    lasts = (legs.filter(pl.col("price_usd").is_not_null()).group_by(*KEY)
             .agg(last_side=pl.col("side").last(), last_price_usd=pl.col("price_usd").last(),
                  last_trade_at=pl.col("block_time").last()))
    return firsts.join(lasts, on=KEY, how="left").sort(*KEY)


def priced_legs(warehouse: Warehouse, as_of: datetime) -> pl.LazyFrame:
    """The legs the pair windows ending at `as_of` price from: every leg of the lake days from
    the longest window's start on, after each pair's last priced leg of
    the days before (`pair_days`). A window's price before its start is the last before it,
    and no window starts earlier, so the days before add only their last."""
    start = f"{as_of - timedelta(seconds=max(PAIR_WINDOWS.values())):%Y-%m-%d}"
    legs = warehouse.day_files("swap_legs")
    made = warehouse.day_files(NAME)
    before = [path for day, paths in made.items() if day < start for path in paths]
    recent = [path for day, paths in legs.items() if day >= start for path in paths]
    parts = [warehouse.read(recent).select(PRICED)] if recent else []
    if before:
        parts.insert(0, warehouse.read(before).filter(pl.col("last_price_usd").is_not_null())
                     .group_by(*KEY, maintain_order=True).last()
                     .select(*KEY, side="last_side", volume_usd=pl.lit(None, pl.Float64),
                             price_usd="last_price_usd", block_time="last_trade_at",
                             maker_key=pl.lit(None, pl.Int64)))
    # `day_files` refuses a lake without days: one of the two holds a file.
    return pl.concat(parts)
