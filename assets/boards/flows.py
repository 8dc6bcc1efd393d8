"""Per-pair board flows: what each pool traded in each board period, with its wash (immediate
round trips) and hosted (routed in by another venue) parts. Round trips read each swap's
neighbours in its pool, which the lake's order gives without sorting 10M rows."""

import polars as pl

from assets.sql_models import BOARD_PERIODS

POOL = ["chain_id", "pair"]


def pair_flows(legs: pl.LazyFrame, pairs: pl.LazyFrame, venues: pl.LazyFrame,
               as_of_s: int) -> pl.DataFrame:
    """Per pair and board period: volume, buy volume, swaps, wash volume (a buy the same wallet
    sells back in the pool's very next swap: both legs) and own volume (neither wash nor hosted:
    what the board ranks); and the day's hosted volume."""
    longest = max(starts for _, starts in BOARD_PERIODS.values())
    maker, side = pl.col("maker"), pl.col("side")
    routers = venues.select("chain_id", sender="router", sender_venue="venue_id").unique()
    hosted = (pl.col("sender_venue").is_not_null()
              & (pl.col("sender_venue") != pl.col("venue_id").fill_null(""))
              & (pl.col("sender_venue") != pl.col("launchpad").fill_null(""))).fill_null(False)
    flagged = (legs.filter(pl.col("ts") > as_of_s - longest, pl.col("ts") <= as_of_s)
               .select(*POOL, "maker", "side", "sender", "ts",
                       usd=pl.col("volume_usd").fill_null(0.0))
               .with_columns(
                   wash=((side == "buy") & (maker.shift(-1).over(POOL) == maker)
                         & (side.shift(-1).over(POOL) == "sell"))
                   | ((side == "sell") & (maker.shift(1).over(POOL) == maker)
                      & (side.shift(1).over(POOL) == "buy")),
                   age=as_of_s - pl.col("ts"))
               .join(pairs.select(*POOL, "venue_id", "launchpad"), on=POOL, how="left")
               .join(routers, on=["chain_id", "sender"], how="left")
               .with_columns(hosted=hosted))
    usd, wash = pl.col("usd"), pl.col("wash").fill_null(False)
    sums = []
    for period, (ends, starts) in BOARD_PERIODS.items():
        inside = (pl.col("age") >= ends) & (pl.col("age") < starts)
        sums += [usd.filter(inside).sum().alias(f"volume_{period}"),
                 usd.filter(inside & (side == "buy")).sum().alias(f"buy_volume_{period}"),
                 inside.sum().cast(pl.Int64).alias(f"txns_{period}"),
                 usd.filter(inside & wash).sum().alias(f"wash_volume_{period}"),
                 usd.filter(inside & ~wash & ~pl.col("hosted")).sum()
                 .alias(f"own_volume_{period}")]
    day = pl.col("age") < BOARD_PERIODS["now"][1]
    sums.append(usd.filter(day & pl.col("hosted")).sum().alias("hosted_volume_now"))
    return flagged.group_by(POOL).agg(sums).sort(POOL).collect()
