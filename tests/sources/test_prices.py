"""The oracle's price process and market hours, worked by hand on small cases."""

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from core.feeds import EQUITY_HOURS, FEEDS
from core.market_hours import MarketHours
from core.prices import (
    EPOCH,
    SLOTS_PER_TICK,
    TICK_S,
    PricePath,
    publish_second,
    slot_at,
    slot_time,
)
from sources.simulator.oracle import PriceBook

BTC = next(f for f in FEEDS if f.symbol == "Crypto.BTC/USD")
AAPL = next(f for f in FEEDS if f.base == "AAPL")


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_equity_hours_follow_new_york_time_across_daylight_saving() -> None:
    hours = MarketHours(EQUITY_HOURS)
    # Friday 2026-07-10 is in EDT (UTC-4): 09:30-16:00 local is 13:30-20:00 UTC.
    assert not hours.is_open(_ts("2026-07-10T13:29:59+00:00"))
    assert hours.is_open(_ts("2026-07-10T13:30:00+00:00"))
    assert not hours.is_open(_ts("2026-07-10T20:00:00+00:00"))
    # Friday 2026-11-20 is in EST (UTC-5): 14:30-21:00 UTC; then closed until Monday 14:30.
    friday = _ts("2026-11-20T20:00:00+00:00")
    assert hours.next_close(friday) == _ts("2026-11-20T21:00:00+00:00")
    assert hours.next_open(friday) is None
    saturday = _ts("2026-11-21T12:00:00+00:00")
    assert not hours.is_open(saturday) and hours.next_close(saturday) is None
    assert hours.next_open(saturday) == _ts("2026-11-23T14:30:00+00:00")
    times = np.array([_ts("2026-11-20T14:29:59+00:00"), _ts("2026-11-20T14:30:00+00:00"),
                      _ts("2026-11-20T20:59:59+00:00"), _ts("2026-11-21T15:00:00+00:00")])
    assert hours.open_mask(times).tolist() == [False, True, True, False]
    always = MarketHours("America/New_York;O,O,O,O,O,O,O;")
    assert always.is_open(saturday) and always.next_open(saturday) is None


def test_holidays_close_a_weekday() -> None:
    hours = MarketHours("America/New_York;0930-1600,0930-1600,0930-1600,0930-1600,0930-1600,"
                        "C,C;1126/C")
    assert not hours.is_open(_ts("2026-11-26T16:00:00+00:00"))  # Thanksgiving, a Thursday
    assert hours.is_open(_ts("2026-11-25T16:00:00+00:00"))


def test_slots_are_400ms_and_publish_in_whole_seconds() -> None:
    assert slot_time(5) == 2.0 and publish_second(4) == 1 and publish_second(5) == 2
    assert slot_at(2.0) == 5 and slot_at(2.39) == 5 and slot_at(2.4) == 6


def test_any_two_readers_compute_the_same_update() -> None:
    slot = slot_at(_ts("2026-11-21T10:00:00.8+00:00"))
    first, second = PricePath(BTC).update(slot), PricePath(BTC).update(slot)
    assert first == second
    assert first.publish_time == int(_ts("2026-11-21T10:00:00+00:00"))


def test_a_tick_slot_is_the_tick_price_and_the_slots_bridge_to_the_next() -> None:
    path = PricePath(BTC)
    tick = 50_000
    prices, _ = path.ticks(tick, tick + 2)
    slots = path.slot_prices(tick)
    assert len(slots) == SLOTS_PER_TICK
    assert slots[0] == prices[0]
    assert path.slot_prices(tick + 1)[0] == prices[1]


def test_the_ema_is_the_hour_half_life_mean_of_six_hours_of_ticks() -> None:
    path = PricePath(BTC)
    tick = 100_000
    prices, ema = path.ticks(tick - 2159, tick + 1)
    weights = 0.5 ** (np.arange(2159, -1, -1) / 360)
    assert abs(ema[-1] - (weights * prices).sum() / weights.sum()) < 1e-9 * prices[-1]


def test_the_lake_is_the_live_process_sampled_each_tick() -> None:
    end = datetime(2026, 11, 20, 22, tzinfo=UTC)
    book = PriceBook(end - timedelta(hours=30), end)
    updates = book.updates()
    for feed in (BTC, AAPL):
        rows = updates.filter(pl.col("feed_id") == feed.feed_id)
        path = PricePath(feed)
        for row in rows.sample(5, seed=1).iter_rows(named=True):
            live = path.update(row["publish_time"] * 5 // 2)
            assert (live.price, live.conf, live.ema_price, live.ema_conf, live.slot,
                    live.prev_publish_time) == (row["price"], row["conf"], row["ema_price"],
                                                row["ema_conf"], row["slot"],
                                                row["prev_publish_time"])
    btc = updates.filter(pl.col("feed_id") == BTC.feed_id)
    assert btc.height == 30 * 3600 // TICK_S
    # Each tick's previous update is the slot 400 ms before it, published a second earlier.
    assert (btc["publish_time"] - btc["prev_publish_time"] == 1).all()


def test_an_equity_publishes_in_market_hours_and_points_back_across_the_close() -> None:
    end = datetime(2026, 11, 21, tzinfo=UTC)
    aapl = PriceBook(end - timedelta(days=2), end).updates().filter(
        pl.col("feed_id") == AAPL.feed_id)
    # Thursday and Friday sessions, 14:30-21:00 UTC: 6.5 h of 10 s ticks each.
    assert aapl.height == 2 * 6.5 * 360
    friday_open = int(_ts("2026-11-20T14:30:00+00:00"))
    first = aapl.filter(pl.col("publish_time") == friday_open).row(0, named=True)
    # Its previous update is Thursday's last slot, 20:59:59.6, published in second 20:59:59.
    assert first["prev_publish_time"] == int(_ts("2026-11-19T20:59:59+00:00"))


def test_the_process_starts_at_its_epoch() -> None:
    path = PricePath(BTC)
    assert path.ticks(0, 1)[0][0] == BTC.price
    assert int(_ts("2024-01-01T00:00:00+00:00")) == EPOCH
