"""The oracle's lake tables: its feeds, and every feed's update at each tick of the process."""

from datetime import datetime

import numpy as np
import polars as pl

from core.feeds import FEEDS, FeedSpec
from core.prices import (
    CONF_RATIO,
    EPOCH,
    SLOT_EPOCH,
    SLOTS_PER_SECOND,
    TICK_S,
    PricePath,
    publish_second,
)
from sources.simulator.world import TokenSpec

# Kept for the simulator's callers: the lake samples the process once a tick.
CADENCE_S = TICK_S


class PriceBook:
    """Every feed's USD price over [start, end), sampled each tick of the price process."""

    def __init__(self, start: datetime, end: datetime) -> None:
        first = -(-(int(start.timestamp()) - EPOCH) // TICK_S)
        self.first_tick = first
        self.start = EPOCH + first * TICK_S
        self.steps = max(0, (int(end.timestamp()) - 1 - self.start) // TICK_S + 1)
        self.processes = {feed.symbol: PricePath(feed) for feed in FEEDS}
        self.paths: dict[str, np.ndarray] = {}
        self.emas: dict[str, np.ndarray] = {}
        for feed in FEEDS:
            prices, ema = self.processes[feed.symbol].ticks(first, first + self.steps)
            self.paths[feed.symbol], self.emas[feed.symbol] = prices, ema

    def usd(self, feed: FeedSpec, t: float) -> float:
        """The feed's price at unix time `t` (its first price before the window)."""
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
            "min_channel": "real_time", "expo": f.expo, "source": "simulator",
        } for f in FEEDS])

    def updates(self) -> pl.DataFrame:
        """The `oracle_updates` table: each feed's update at every tick its market is open,
        exactly as a live reader of the process sees it at that tick's first slot."""
        times = self.start + TICK_S * np.arange(self.steps, dtype=np.int64)
        frames = []
        for feed in FEEDS:
            process = self.processes[feed.symbol]
            scale = process.scale
            slots = times * 5 // 2
            previous = np.where(process.hours.open_mask(times - 1 / SLOTS_PER_SECOND),
                                times - 1, -1)
            opened = process.hours.open_mask(times)
            for i in np.flatnonzero(opened & (previous < 0)):
                before = process.previous_slot(int(slots[i]))
                previous[i] = times[i] if before is None else publish_second(before)
            frames.append(pl.DataFrame({
                "publish_time": times, "p": self.paths[feed.symbol],
                "e": self.emas[feed.symbol], "prev_publish_time": previous,
                "slot": slots - SLOT_EPOCH * 5 // 2,
            }).filter(pl.Series(opened)).with_columns(
                feed_id=pl.lit(feed.feed_id),
                price=(pl.col("p") * scale).round().cast(pl.Int64),
                conf=(pl.col("p") * CONF_RATIO * scale).round().cast(pl.Int64),
                expo=pl.lit(feed.expo, pl.Int64),
                ema_price=(pl.col("e") * scale).round().cast(pl.Int64),
                ema_conf=(pl.col("e") * CONF_RATIO * scale).round().cast(pl.Int64),
            ))
        columns = ["feed_id", "publish_time", "price", "conf", "expo", "ema_price", "ema_conf",
                   "slot", "prev_publish_time"]
        return pl.concat(frames).select(columns).with_columns(source=pl.lit("simulator"))
