"""The tail writer's live rows: the swaps a window left, found by time, and the pairs whose
window figures a tail carries (those a swap entered or left), worked by hand."""

from datetime import UTC, datetime

import orjson
import polars as pl
import pytest

from core.windows import window_prices
from tail.rows import (
    PAIR_COLUMNS,
    AtSnapshot,
    PriceIndex,
    SwapTimeline,
    _pair_figures,
    as_swaps,
)

MINUTE = 60_000
HOUR = 60 * MINUTE
# The snapshot's watermark.
W = int(datetime(2026, 11, 25, 12, tzinfo=UTC).timestamp() * 1000)


def _trades(rows: list[tuple[str, int, str, str, float]]) -> pl.DataFrame:
    """Trade rows (pair, at_ms, side, maker, price) of chain 1, each worth $10."""
    return pl.DataFrame([{"chain_id": 1, "pair": p, "at_ms": at, "tx_type": side, "maker": m,
                          "price_usd": price, "volume_usd": 10.0}
                         for p, at, side, m, price in rows])


def _at(*trades: pl.DataFrame) -> AtSnapshot:
    """What the tails read of a snapshot at W whose trades table has the parts `trades`."""
    # B was rugged: a pair's terminal status stays, whatever its swaps.
    given = {"chain_id": [1, 1, 1], "pair": ["A", "B", "C"], "base": ["ta", "tb", "tc"],
             "quote": ["q", "q", "q"], "rugged": [False, True, False],
             "status": ["inactive", "rugged", "active"]}
    pairs = pl.DataFrame(given).with_columns(
        *[pl.lit(None).alias(c) for c in PAIR_COLUMNS if c not in given])
    basis = pl.DataFrame({"chain_id": [1], "address": ["ta"]})
    return AtSnapshot.of("2026-11-25T12:00:00+00:00", iter(trades), pairs, basis)


def test_the_swaps_in_several_ranges_come_once_each_in_time_order():
    timed = SwapTimeline.of(_trades([("A", at, "buy", "m", 1.0) for at in (13, 1, 5, 2, 8, 3)]))
    found = timed.within({"a": (1, 3), "b": (2, 5), "c": (10, 13), "empty": (7, 7)})
    # (1, 3] and (2, 5] overlap into (1, 5]: 2, 3, 5; (10, 13]: 13.
    assert found["at_ms"].to_list() == [2, 3, 5, 13]


def test_a_tail_carries_the_figures_of_the_pairs_a_swap_entered_or_left_and_only_those():
    at = _at(_trades([
        ("A", W - 10 * MINUTE, "buy", "m1", 2.0),        # in h1 and after; stays
        ("B", W - 60 * MINUTE + 30_000, "sell", "m2", 4.0),  # leaves h1 a minute later
        ("C", W - 3 * 60 * MINUTE, "buy", "m3", 1.0),     # in h6 and h24; stays
    ]))
    tail = as_swaps(_trades([("A", W + 30_000, "sell", "m4", 3.0)])).cast(at.pairs.timed.swaps.schema)
    figures = _pair_figures(at, tail, W + MINUTE)
    assert figures["pair"].to_list() == ["A", "B"]
    a, b = (orjson.loads(f) for f in figures["fields"].to_list())
    # A: its tail sell is in every window; its buy 10 minutes back in h1 and after.
    assert a["txn"]["m5"] == {"buys": 0, "sells": 1, "buy_volume": 0.0, "sell_volume": 10.0,
                              "buyers": 0, "sellers": 1}
    assert [a["windows"][w]["txns"] for w in ("h1", "h24")] == [{"buys": 1, "sells": 1}] * 2
    # Its last price 3 against 2: m5 opened at the buy (the last price before its start), h1
    # at its first swap (the pair is younger than the window).
    assert a["price_change"]["m5"] == a["price_change"]["h1"] == 50.0
    assert figures["last_trade_at"].to_list()[0] == "2026-11-25T12:00:30.000Z"
    # B: its only swap has left h1 and is still in h6.
    assert b["windows"]["h1"]["txns"] == {"buys": 0, "sells": 0}
    assert b["windows"]["h6"]["txns"] == {"buys": 0, "sells": 1}
    assert b["volume"]["h1"] == 0.0 and b["volume"]["h6"] == 10.0
    # A traded in the day: active (it was inactive in the snapshot); B stays rugged.
    assert figures["status"].to_list() == ["active", "rugged"]


def test_the_prices_read_of_a_pair_are_the_few_its_windows_and_range_need():
    swaps = as_swaps(_trades([("A", W + at, "buy", "m", price) for at, price in (
        (-25 * HOUR, 5.0), (-20 * HOUR, 1.0), (-15 * HOUR, 3.0), (-12 * HOUR, 2.0),
        (-10 * HOUR, 1.0), (-2 * HOUR, 9.0), (-30 * MINUTE, 4.0))]))
    read = PriceIndex.of(swaps).read([(1, "A"), (1, "unknown")], W + HOUR)
    # At W+1h: the h24 window opens at W-23h (last before: -25h, first after: -20h, also the
    # range's low, reached first there), h6 at W-5h (-10h before it, -2h after it, the high),
    # h1 and m5 after the last swap (-30 min).
    assert read["at_ms"].to_list() == [W + at for at in (
        -25 * HOUR, -20 * HOUR, -10 * HOUR, -2 * HOUR, -30 * MINUTE)]
    prices = window_prices(read.lazy(), W + HOUR).collect().row(0, named=True)
    assert (prices["range_low"], prices["range_low_ms"]) == (1.0, W - 20 * HOUR)
    assert (prices["range_high"], prices["range_high_ms"]) == (9.0, W - 2 * HOUR)
    assert prices["price_change_h24"] == pytest.approx(-20.0)  # 4 against 5
    assert prices["price_change_h6"] == pytest.approx(300.0)  # 4 against 1
    assert prices["price_change_h1"] == 0.0


def test_the_parts_read_one_at_a_time_keep_each_pairs_last_priced_swap_before_the_windows():
    at = _at(
        _trades([("A", W - 30 * HOUR, "buy", "m", 1.0), ("B", W - 28 * HOUR, "buy", "m", 7.0)]),
        _trades([("A", W - 26 * HOUR, "sell", "m", 2.0), ("A", W - 25 * HOUR, "buy", "m", None)]),
        _trades([("A", W - 2 * HOUR, "buy", "m", 3.0)]))
    # Before the longest window (W-24h) only each pair's last priced swap is kept: A's at -26h
    # (its -25h swap has no price; its -30h swap an earlier part's), B's at -28h; then the
    # window's own.
    assert at.priced.rows.select("pair", "at_ms", "price_usd").rows() == [
        ("A", W - 26 * HOUR, 2.0), ("A", W - 2 * HOUR, 3.0), ("B", W - 28 * HOUR, 7.0)]
    assert sorted(at.pairs.timed.swaps["at_ms"].to_list()) == [
        W - 28 * HOUR, W - 26 * HOUR, W - 2 * HOUR]
