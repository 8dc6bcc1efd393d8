"""Perp history and liquidation days worked by hand: hourly points from the last observed open
interest, unobserved open interest null and never zero, days while the feed was alive."""

from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest

from assets.perps.history import daily_liquidations, history_points
from checks.outcome import validate
from checks.schemas.perps import LiquidationDay, PerpPoint

T0 = datetime(2026, 11, 18, tzinfo=UTC)
M = timedelta(minutes=5)


def snap(at: datetime, mark: float, oi: float | None, funding: float) -> dict:
    return {"chain_id": 999, "market": "0xm", "observed_at": at, "mark_price": mark,
            "oracle_price": 100.0, "oi_long_usd": oi, "oi_short_usd": None if oi is None else oi,
            "funding_long_1h": funding, "funding_short_1h": -funding, "borrow_long_1h": 1e-6,
            "borrow_short_1h": 1e-6, "volume_usd": 1.0}


SNAPSHOTS = pl.DataFrame([
    snap(T0, 101.0, 10.0, 0.001), snap(T0 + M, 102.0, 20.0, 0.003),
    snap(T0 + 2 * M, 99.0, None, 0.002), snap(T0 + 12 * M, 98.0, None, 0.004),
])


def test_hourly_points_and_unobserved_open_interest() -> None:
    points = history_points(SNAPSHOTS.lazy(), T0 + timedelta(hours=2))
    hour = points.filter(pl.col("interval") == "1h").sort("observed_at").to_dicts()
    first, second = hour
    # The first hour: last mark 99, last observed open interest 20 + 20, mean funding 0.002.
    assert (first["mark_price"], first["oi_usd"], first["oi_known"]) == (99.0, 40.0, True)
    assert first["funding_long_1h"] == pytest.approx(0.002)
    assert first["premium"] == pytest.approx(99.0 / 100.0 - 1)
    assert (second["oi_usd"], second["oi_long_usd"], second["oi_known"]) == (None, None, False)
    five = points.filter(pl.col("interval") == "5m").sort("observed_at")
    assert five["oi_known"].to_list() == [True, True, False, False]
    assert validate("perp_history", PerpPoint, points).passed
    zeroed = points.with_columns(pl.col("oi_usd", "oi_long_usd", "oi_short_usd").fill_null(0.0))
    assert not validate("perp_history", PerpPoint, zeroed).passed


def test_liquidation_days_while_the_feed_lived() -> None:
    def liquidation(at: datetime, side: str, size: float, market: str = "0xm") -> dict:
        return {"chain_id": 999, "block_time": at, "market": market, "side": side,
                "size_usd": size}

    liquidations = pl.DataFrame([liquidation(T0 + timedelta(hours=1), "long", 100.0),
                                 liquidation(T0 + timedelta(hours=2), "long", 300.0),
                                 liquidation(T0 + timedelta(hours=30), "short", 50.0, "0xn")])
    beats = pl.DataFrame({"chain_id": [999, 999],
                          "observed_at": [T0, T0 + timedelta(hours=36)]})
    as_of = T0 + timedelta(days=2, hours=23)
    days = daily_liquidations(liquidations.lazy(), beats.lazy(), as_of)
    venue = days.filter(pl.col("market").is_null()).sort("day").to_dicts()
    # The feed beat on the 18th and the 19th and then stopped: no row for the 20th.
    assert [d["day"] for d in venue] == [date(2026, 11, 18), date(2026, 11, 19)]
    assert (venue[0]["liquidated_long_usd"], venue[0]["long_count"],
            venue[0]["max_liquidation_usd"]) == (400.0, 2, 300.0)
    assert (venue[1]["liquidated_short_usd"], venue[1]["short_count"]) == (50.0, 1)
    quiet = days.filter(pl.col("market") == "0xm", pl.col("day") == date(2026, 11, 19)).row(
        0, named=True)
    assert (quiet["long_count"], quiet["liquidated_long_usd"]) == (0, 0.0)
    assert days["stale"].all()
    assert validate("liquidation_days", LiquidationDay, days).passed
    short = days.with_columns(long_count=pl.when(pl.col("market").is_null())
                              .then(pl.col("long_count") + 1).otherwise("long_count"))
    assert not validate("liquidation_days", LiquidationDay, short).passed
