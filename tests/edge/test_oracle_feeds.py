"""A snapshot's feed catalog serves the history window and nothing before it, although the
published table starts at the day the window opens in."""

import asyncio

import polars as pl

from core.market_hours import MarketHours
from edge.oracle.feeds import Catalog, Feed
from edge.oracle.hub import PriceHub

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
