"""Per-pair board flows: what each pool traded in each board period, with its wash (immediate
round trips) and hosted (routed in by another venue) parts, from one pass over the legs."""

from datetime import datetime, timedelta

import polars as pl

from assets.round_trips import POOL, round_trips
from assets.sql_models import BOARD_PERIODS
from core.columns import EVENT
from figures.pair_trades import with_swap_strings

FIGURES = ("volume", "buy_volume", "txns", "wash_volume", "own_volume")


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
    it. A period at a time (no figure spans two): a run holds a day of legs, not three; one
    pass over each period's legs, everything the boards sum per router or pair is here."""
    usd, wash = pl.col("usd"), pl.col("wash")
    flows = []
    for period in BOARD_PERIODS:
        swaps = (legs.filter(in_period(as_of, period))
                 .select(*EVENT, "pair", maker="maker_key", buy=pl.col("side") == "buy",
                         usd=pl.col("volume_usd").fill_null(0.0)).collect())
        swaps = with_swap_strings(swaps, raw, ("sender",)).drop("block_number", "log_index")
        flows.append(swaps.lazy().with_columns(round_trips(swaps))
                     .group_by(*POOL, "sender")
                     .agg(volume=usd.sum(), buy_volume=usd.filter("buy").sum(),
                          txns=pl.len().cast(pl.Int64), wash_volume=usd.filter(wash).sum())
                     .with_columns(period=pl.lit(period)).collect())
        del swaps
    return pl.concat(flows).select(*POOL, "sender", "period", "volume", "buy_volume", "txns",
                                   "wash_volume").sort(*POOL, "sender", "period")


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
