"""Per-pair board flows: what each pool traded in each board period, with its wash (immediate
round trips) and hosted (routed in by another venue) parts, from one pass over the legs."""

from datetime import datetime, timedelta

import polars as pl

from assets.round_trips import POOL, round_trips
from assets.sql_models import BOARD_PERIODS
from core.columns import EVENT
from figures.pair_trades import with_swap_strings

FIGURES = ("volume", "buy_volume", "txns", "wash_volume", "own_volume")


def period_of(age: pl.Expr) -> pl.Expr:
    """The board period (its name) a swap `age` seconds before the watermark falls in."""
    expr = pl.lit(None, pl.String)
    for period, (ends, starts) in reversed(BOARD_PERIODS.items()):
        expr = pl.when((age >= ends) & (age < starts)).then(pl.lit(period)).otherwise(expr)
    return expr


def age(as_of: datetime) -> pl.Expr:
    """Seconds from a leg's block time to the watermark, exact to the microsecond: a board
    period is (as_of - starts, as_of - ends] on the same instants as a pair's windows, so a
    swap 0.4 s into the day is in the day everywhere."""
    return (pl.lit(as_of) - pl.col("block_time")).dt.total_microseconds() / 1_000_000


def in_period(as_of: datetime, period: str) -> pl.Expr:
    """Whether a leg falls in the board period named."""
    ends, starts = BOARD_PERIODS[period]
    return age(as_of).is_between(ends, starts, closed="left")


# The longest board period reaches this far back of the watermark: the swaps the flows read.
BOARD_SPAN = timedelta(seconds=max(starts for _, starts in BOARD_PERIODS.values()))


def router_flows(legs: pl.LazyFrame, raw: pl.LazyFrame, as_of: datetime) -> pl.DataFrame:
    """Per pool, router (the sender of the lake's swap, `raw`) and board period: volume, buy
    volume, swaps and wash volume, a round trip counting in a period when both its legs are in
    it. The one pass over the legs; everything the boards sum per router or pair is here."""
    seconds_ago = age(as_of)
    swaps = (legs.filter(seconds_ago.is_between(0, BOARD_SPAN.total_seconds(), closed="left"))
             .select(*EVENT, "pair", maker="maker_key", buy=pl.col("side") == "buy",
                     period=period_of(seconds_ago),
                     usd=pl.col("volume_usd").fill_null(0.0))
             .drop_nulls("period").collect())
    # By period: the three periods' days, not the eight days from the oldest to now.
    swaps = with_swap_strings(swaps, raw, ("sender",), ("period",)).drop(
        "block_number", "log_index")
    usd, wash = pl.col("usd"), pl.col("wash")
    return (swaps.lazy().with_columns(round_trips(swaps, "period"))
            .group_by(*POOL, "sender", "period")
            .agg(volume=usd.sum(), buy_volume=usd.filter("buy").sum(),
                 txns=pl.len().cast(pl.Int64), wash_volume=usd.filter(wash).sum())
            .sort(*POOL, "sender", "period").collect())


def pair_flows(by_router: pl.LazyFrame, pairs: pl.LazyFrame,
               venues: pl.LazyFrame) -> pl.DataFrame:
    """Per pair and board period: volume, buy volume, swaps, wash volume (a buy the same wallet
    sells back in the pool's very next swap: both legs) and own volume (neither wash nor hosted:
    what the board ranks); and the day's hosted volume (what another venue's router brought in:
    not the pool's own venue or its launchpad)."""
    routers = venues.select("chain_id", sender="router", sender_venue="venue_id").unique()
    hosted = (pl.col("sender_venue").is_not_null()
              & (pl.col("sender_venue") != pl.col("venue_id").fill_null(""))
              & (pl.col("sender_venue") != pl.col("launchpad").fill_null(""))).fill_null(False)
    per_period = (by_router.join(routers, on=["chain_id", "sender"], how="left")
                  .join(pairs.select(*POOL, "venue_id", "launchpad"), on=POOL, how="left")
                  .with_columns(hosted=hosted)
                  .group_by(*POOL, "period").agg(
                      pl.col("volume", "buy_volume", "txns", "wash_volume").sum(),
                      hosted_volume=pl.col("volume").filter("hosted").sum(),
                      own_volume=(pl.col("volume") - pl.col("wash_volume"))
                      .filter(~pl.col("hosted")).sum())
                  .collect())
    wide = per_period.select(*POOL).unique()
    for period in BOARD_PERIODS:
        wide = wide.join(per_period.filter(pl.col("period") == period).select(
            *POOL, *[pl.col(f).alias(f"{f}_{period}") for f in FIGURES],
            *([pl.col("hosted_volume").alias("hosted_volume_now")] if period == "now" else [])),
            on=POOL, how="left")
    return wide.with_columns(
        pl.selectors.starts_with(*[f"{f}_" for f in FIGURES], "hosted_").fill_null(0)
    ).sort(POOL)
