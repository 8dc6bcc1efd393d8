"""Perp products: schemas of record and the rules of spec 4.8 (open interest nobody observed is
never a zero; liquidation days are UTC days while the feed was alive)."""

import pandera.polars as pa
import polars as pl

from checks.schemas.product import Product
from core.columns import Timestamp, ts

OI = ("oi_usd", "oi_long_usd", "oi_short_usd")


class PerpMarketRow(Product):
    """One perp market of GET /perps."""

    chain_id: int
    market: str
    symbol: str
    item: str

    class Config:
        unique = ["chain_id", "market"]


class PerpPoint(Product):
    """One history point of a market at 5 minutes or an hour."""

    chain_id: int
    market: str
    interval: str = pa.Field(isin=["5m", "1h"])
    observed_at: Timestamp = ts()
    mark_price: float = pa.Field(gt=0)
    oracle_price: float = pa.Field(gt=0)
    oi_usd: float | None = pa.Field(nullable=True, ge=0)
    oi_known: bool

    class Config:
        unique = ["chain_id", "market", "interval", "observed_at"]

    @pa.dataframe_check

    @classmethod
    def unobserved_open_interest_is_not_zero(cls, data) -> pl.LazyFrame:
        """oi_known is false exactly when open interest was not observed, and then every open
        interest figure is null, never zero."""
        known = pl.col("oi_known")
        return data.lazyframe.select(
            (known == pl.col("oi_usd").is_not_null())
            & pl.all_horizontal([known == pl.col(c).is_not_null() for c in OI]))

    @pa.dataframe_check

    @classmethod
    def open_interest_is_both_sides(cls, data) -> pl.LazyFrame:
        """oi_usd is long plus short."""
        return data.lazyframe.select(~pl.col("oi_known") | (
            (pl.col("oi_usd") - pl.col("oi_long_usd") - pl.col("oi_short_usd")).abs()
            <= 1e-6 * pl.col("oi_usd")))


class LiquidationDay(Product):
    """One UTC day of liquidations of a market, or of the whole venue (market null)."""

    chain_id: int
    market: str | None = pa.Field(nullable=True)
    liquidated_long_usd: float = pa.Field(ge=0)
    liquidated_short_usd: float = pa.Field(ge=0)
    max_liquidation_usd: float = pa.Field(ge=0)
    long_count: int = pa.Field(ge=0)
    short_count: int = pa.Field(ge=0)
    stale: bool

    class Config:
        unique = ["chain_id", "market", "day"]

    @pa.dataframe_check

    @classmethod
    def counts_match_amounts(cls, data) -> pl.LazyFrame:
        """No liquidations on a side means nothing liquidated on it; the largest one fits."""
        return data.lazyframe.select(
            ((pl.col("long_count") == 0) == (pl.col("liquidated_long_usd") == 0))
            & ((pl.col("short_count") == 0) == (pl.col("liquidated_short_usd") == 0))
            & (pl.col("max_liquidation_usd") <= pl.max_horizontal(
                "liquidated_long_usd", "liquidated_short_usd") + 1e-6))

    @pa.dataframe_check

    @classmethod
    def venue_day_sums_its_markets(cls, data) -> pl.LazyFrame:
        """The venue's day is the sum of its markets' days."""
        frame = data.lazyframe
        markets = (frame.filter(pl.col("market").is_not_null()).group_by("chain_id", "day")
                   .agg(long=pl.col("long_count").sum(), short=pl.col("short_count").sum()))
        return (frame.filter(pl.col("market").is_null())
                .join(markets, on=["chain_id", "day"], how="left")
                .select((pl.col("long_count") == pl.col("long").fill_null(0))
                        & (pl.col("short_count") == pl.col("short").fill_null(0))))
