"""The oracle price process: every feed's price, confidence and EMA at a fixed cadence."""

from datetime import datetime

import numpy as np
import polars as pl

from sources.simulator.world import FEEDS, FeedSpec, TokenSpec

CADENCE_S = 10
SLOT_EPOCH = 1_600_000_000
SECONDS_PER_YEAR = 365 * 86_400


class PriceBook:
    """Simulated USD prices of every feed over [start, end), at CADENCE_S seconds."""

    def __init__(self, start: datetime, end: datetime, rng: np.random.Generator) -> None:
        self.start = int(start.timestamp())
        self.steps = int((end - start).total_seconds()) // CADENCE_S
        dt = CADENCE_S / SECONDS_PER_YEAR
        self.paths: dict[str, np.ndarray] = {}
        for feed in FEEDS:
            shocks = rng.normal(0.0, feed.annual_vol * np.sqrt(dt), self.steps)
            if feed.annual_vol < 0.01:
                self.paths[feed.symbol] = feed.price * (1.0 + np.cumsum(shocks) * 0.02)
            else:
                self.paths[feed.symbol] = feed.price * np.exp(np.cumsum(shocks))

    def usd(self, feed: FeedSpec, t: float) -> float:
        """The feed's price at unix time `t` (its opening price before the window)."""
        i = int((t - self.start) // CADENCE_S)
        path = self.paths[feed.symbol]
        return float(path[min(max(i, 0), len(path) - 1)])

    def quote_usd(self, token: TokenSpec, t: float) -> float:
        """USD price of a quote token at `t`, through its feed."""
        assert token.feed is not None, f"{token.symbol} has no price feed"
        return self.usd(token.feed, t)

    def feeds(self) -> pl.DataFrame:
        """The `oracle_feeds` table."""
        return pl.DataFrame([{
            "feed_id": f.feed_id, "compatible_id": f.compatible_id, "symbol": f.symbol,
            "asset_type": f.asset_type, "base": f.base,
            "quote_currency": f.symbol.split("/")[1], "description": f"{f.base} / US DOLLAR",
            "display_symbol": f"{f.base}/{f.symbol.split('/')[1]}",
            "generic_symbol": f"{f.base}{f.symbol.split('/')[1]}", "schedule": f.schedule,
            "min_channel": "real_time", "expo": f.expo,
        } for f in FEEDS])

    def updates(self) -> pl.DataFrame:
        """The `oracle_updates` table: one update per feed per tick (equities in market hours)."""
        times = self.start + CADENCE_S * np.arange(self.steps, dtype=np.int64)
        frames = []
        for feed in FEEDS:
            scale = 10.0 ** -feed.expo
            frame = pl.DataFrame({"publish_time": times, "p": self.paths[feed.symbol]})
            if feed.asset_type == "Equity":
                frame = frame.filter(_market_open(pl.col("publish_time")))
            frames.append(frame.with_columns(
                feed_id=pl.lit(feed.feed_id),
                price=(pl.col("p") * scale).round().cast(pl.Int64),
                conf=(pl.col("p") * scale * 4e-4).round().cast(pl.Int64),
                expo=pl.lit(feed.expo, pl.Int64),
            ).with_columns(
                ema_price=pl.col("price").ewm_mean(half_life=360).round().cast(pl.Int64),
                ema_conf=pl.col("conf").ewm_mean(half_life=360).round().cast(pl.Int64),
                slot=((pl.col("publish_time") - SLOT_EPOCH) * 5 // 2).cast(pl.Int64),
                prev_publish_time=pl.col("publish_time").shift(1).fill_null(
                    pl.col("publish_time")),
            ).drop("p"))
        columns = ["feed_id", "publish_time", "price", "conf", "expo", "ema_price", "ema_conf",
                   "slot", "prev_publish_time"]
        return pl.concat(frames).select(columns)


def _market_open(publish_time: pl.Expr) -> pl.Expr:
    """US equity hours, 14:30-21:00 UTC on weekdays (the schedule's hours, without DST)."""
    ts = pl.from_epoch(publish_time, time_unit="s")
    minute = ts.dt.hour().cast(pl.Int32) * 60 + ts.dt.minute().cast(pl.Int32)
    return (ts.dt.weekday() <= 5) & (minute >= 870) & (minute < 1260)
