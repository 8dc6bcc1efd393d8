"""A snapshot's feed catalog serves the history window and nothing before it, although the
published table starts at the day the window opens in."""

import asyncio

import polars as pl

from core.market_hours import MarketHours
from edge.oracle.feeds import Catalog, Feed
from edge.oracle.hub import PriceHub, Update

A = "a" * 64
ALWAYS = "America/New_York;O,O,O,O,O,O,O;"


def test_the_catalog_answers_within_the_window_only() -> None:
    times = [100, 150, 200, 250]
    rows = pl.DataFrame({"feed_id": [A] * 4, "publish_time": times, "price": [1, 2, 3, 4],
                         "conf": [0] * 4, "expo": [-8] * 4, "ema_price": [1] * 4,
                         "ema_conf": [0] * 4, "slot": [1, 2, 3, 4],
                         "prev_publish_time": [t - 1 for t in times]})
    feed = Feed(A, None, -8, {}, MarketHours(ALWAYS))
    found = Catalog([feed], {A: feed}, rows, (160, 260))
    # Two updates of the four lie in the window [160, 260]: 200 and 250.
    assert found.updates == 2
    history = found.history(feed)
    assert history is not None and history.times.tolist() == [200, 250]
    hub = asyncio.run(_hub())
    assert found.first_at_or_after(feed, 150, hub) is None
    first = found.first_at_or_after(feed, 160, hub)
    assert first is not None and (first.publish_time, first.price) == (200, 3)


async def _hub() -> PriceHub:
    return PriceHub()


B, C = "b" * 64, "c" * 64
WEEKDAYS = "America/New_York;O,O,O,O,O,C,C;"


def test_a_hermes_feed_with_no_update_for_a_minute_is_stale() -> None:
    asyncio.run(_a_hermes_feed_with_no_update_for_a_minute_is_stale())


async def _a_hermes_feed_with_no_update_for_a_minute_is_stale() -> None:
    """Stale: a Hermes feed, its market open, whose latest update is more than 60 s old (or
    missing). Never a Chainlink feed (it answers on deviation and heartbeat), nor a closed
    market's."""
    hermes = Feed(A, None, -8, {"symbol": "ETH/USD"}, MarketHours(ALWAYS), "hermes")
    silent = Feed(C, None, -8, {"symbol": "BTC/USD"}, MarketHours(ALWAYS), "hermes")
    chainlink = Feed(B, None, -8, {"symbol": "USDC/USD"}, MarketHours(ALWAYS), "chainlink")
    found = Catalog([hermes, silent, chainlink], {}, pl.DataFrame(), (0, 0))
    hub = PriceHub()
    now = 1_800_000_000.0
    hub.receive([Update(A, 1, 0, -8, 1, 0, 1_799_999_950, 1_799_999_949, 1, 1_799_999_950),
                 Update(B, 1, 0, -8, 1, 0, 1_799_990_000, 1_799_989_000, 1, 1_799_990_000)])
    # 50 s old: fresh; the BTC feed never answered.
    assert found.stale(hub, now) == [{"id": C, "symbol": "BTC/USD", "publish_time": None}]
    # 61 s old: stale; the Chainlink feed's 10,000 s are not.
    assert [f["id"] for f in found.stale(hub, now + 11)] == [A, C]
    # Saturday 2027-01-16 15:00 UTC: a weekday-only Hermes market is closed, so not stale.
    closed = Feed(A, None, -8, {"symbol": "AAPL/USD"}, MarketHours(WEEKDAYS), "hermes")
    assert not closed.stale(hub, 1_800_111_600.0)
