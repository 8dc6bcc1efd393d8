"""Window figures, the one definition the batch and the live edge share, on hand-made swaps."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from core.windows import (
    blocks_of,
    in_windows,
    left_ranges,
    maker_sums,
    moved_blocks,
    token_swaps,
    window_blocks,
    window_prices,
    window_ranges,
)

AS_OF_MS = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp() * 1000)
DAY_MS = 86_400_000


def _swaps(rows: list[tuple[int, str, object, float | None, float | None]]) -> pl.LazyFrame:
    return pl.DataFrame(
        {"chain_id": [1] * len(rows), "pair": ["p"] * len(rows),
         "at_ms": [r[0] for r in rows], "side": [r[1] for r in rows],
         "maker": [r[2] for r in rows], "volume_usd": [r[3] for r in rows],
         "price_usd": [r[4] for r in rows]},
        schema_overrides={"volume_usd": pl.Float64, "price_usd": pl.Float64}).lazy()


def test_window_blocks_count_swaps_and_wallets_inside_each_window() -> None:
    swaps = _swaps([
        (AS_OF_MS - DAY_MS, "buy", "a", 1.0, 1.0),          # exactly a day old: out
        (AS_OF_MS - DAY_MS + 300, "buy", "a", 2.0, 1.0),    # 300 ms younger: in the day
        (AS_OF_MS - 240_000, "sell", "b", 4.0, 1.0),        # four minutes old: in m5
        (AS_OF_MS - 200_000, "add", "c", 64.0, 1.0),        # liquidity, not a swap: out
        (AS_OF_MS, "buy", "a", 8.0, 1.0),                   # at the watermark: in
        (AS_OF_MS + 1_000, "sell", "d", 16.0, 1.0),          # after it: out
        (AS_OF_MS - 3_000_000, "sell", "e", None, None),    # unpriced: a swap worth 0
    ])
    row = window_blocks(swaps, AS_OF_MS).collect().row(0, named=True)
    assert (row["txns_h24"], row["volume_h24_usd"]) == (4, 14.0)
    assert (row["buys_h24"], row["sells_h24"], row["buy_volume_h24_usd"],
            row["sell_volume_h24_usd"]) == (2, 2, 10.0, 4.0)
    assert (row["buyers_h24"], row["sellers_h24"], row["makers_h24"]) == (1, 2, 3)
    assert (row["txns_h1"], row["makers_h1"]) == (3, 3)
    assert (row["txns_m5"], row["buys_m5"], row["buy_volume_m5_usd"], row["makers_m5"]) == (
        2, 1, 8.0, 2)


def test_the_rows_a_window_may_count_start_after_the_longest_ones_start() -> None:
    # The longest window is a day: a row exactly a day old is in no window, one a millisecond
    # younger (a window counts whole milliseconds) and one at the watermark are read.
    as_of = datetime(2026, 11, 20, 0, 0, 0, 700, tzinfo=UTC)
    at = [as_of - timedelta(days=1), as_of - timedelta(days=1) + timedelta(milliseconds=1),
          as_of, as_of + timedelta(seconds=1)]
    kept = pl.DataFrame({"block_time": at}).filter(in_windows(as_of))["block_time"].to_list()
    assert kept == at[1:]


def test_window_prices_open_each_window_at_the_price_before_it() -> None:
    swaps = _swaps([
        (AS_OF_MS - 2 * DAY_MS, "buy", "a", 1.0, 2.0),       # before the day: opens h24
        (AS_OF_MS - 3_000_000, "sell", "a", 1.0, 4.0),       # 50 min ago: opens m5
        (AS_OF_MS - 60_000, "buy", "a", 1.0, 1.0),           # the day's low
        (AS_OF_MS - 30_000, "add", "a", 1.0, 100.0),         # not a swap
        (AS_OF_MS, "buy", "a", 1.0, 5.0),                    # last
        (AS_OF_MS + 5, "buy", "a", 1.0, 9.0),                # after the watermark
    ])
    row = window_prices(swaps, AS_OF_MS).collect().row(0, named=True)
    assert (row["last_price"], row["last_trade_ms"]) == (5.0, AS_OF_MS)
    assert row["price_change_h24"] == (5.0 / 2.0 - 1.0) * 100.0
    assert row["price_change_h1"] == (5.0 / 2.0 - 1.0) * 100.0
    assert row["price_change_m5"] == (5.0 / 4.0 - 1.0) * 100.0
    assert (row["range_low"], row["range_low_ms"]) == (1.0, AS_OF_MS - 60_000)
    assert (row["range_high"], row["range_high_ms"]) == (5.0, AS_OF_MS)


def test_a_pair_younger_than_a_window_opens_at_its_first_swap() -> None:
    swaps = _swaps([(AS_OF_MS - 100_000, "buy", "a", 1.0, 4.0),
                    (AS_OF_MS - 50_000, "sell", "b", 1.0, 3.0)])
    row = window_prices(swaps, AS_OF_MS).collect().row(0, named=True)
    assert row["price_change_h24"] == row["price_change_m5"] == (3.0 / 4.0 - 1.0) * 100.0


def test_a_token_counts_its_swaps_across_pairs_from_its_own_side() -> None:
    # Pools p (X base, W quote) and q (W base, Y quote). In p, a buys X (W leaves: a sells W);
    # in q, a buys W and b sells W. W's day: a sold once and bought once, b sold once.
    swaps = pl.concat([
        _swaps([(AS_OF_MS - 60_000, "buy", "a", 10.0, 1.0)]),
        _swaps([(AS_OF_MS - 30_000, "buy", "a", 4.0, 2.0),
                (AS_OF_MS - 20_000, "sell", "b", 1.0, 2.0)]).with_columns(pair=pl.lit("q"))])
    pair_tokens = pl.LazyFrame({"chain_id": [1, 1], "pair": ["p", "q"], "base": ["X", "W"],
                                "quote": ["W", "Y"]})
    rows = {r["token"]: r for r in window_blocks(token_swaps(swaps, pair_tokens), AS_OF_MS,
                                                 "token").collect().iter_rows(named=True)}
    w = rows["W"]
    assert (w["txns_h24"], w["buys_h24"], w["sells_h24"]) == (3, 1, 2)
    assert (w["buy_volume_h24_usd"], w["sell_volume_h24_usd"]) == (4.0, 11.0)
    assert (w["buyers_h24"], w["sellers_h24"], w["makers_h24"]) == (1, 2, 2)
    # Y is only ever a quote: a's buy of W sells Y, b's sell of W buys it.
    assert (rows["Y"]["buys_h24"], rows["Y"]["sells_h24"], rows["X"]["buys_h24"]) == (1, 1, 1)


def test_window_sums_move_to_a_later_watermark_by_what_entered_and_what_left() -> None:
    minute = 60_000
    then, now = AS_OF_MS, AS_OF_MS + 2 * minute
    held = _swaps([
        (then - 6 * minute, "buy", "a", 1.0, 1.0),      # in h1 at both; never in m5
        (then - 4 * minute, "sell", "a", 2.0, 1.0),     # in m5 then, out of it now
        (then - 270_000, "sell", "e", 0.2, 1.0),        # e's two sells leave m5 too
        (then - 4 * minute, "sell", "e", 0.1, 1.0),
        (then - minute, "buy", "b", 4.0, 1.0),          # in m5 at both
        (then - DAY_MS + minute, "sell", "d", 16.0, 1.0),  # in h24 then, out of it now
    ])
    arrived = _swaps([(then + minute, "buy", "c", 8.0, 1.0)])
    sums = maker_sums(held, window_ranges(then))
    row = moved_blocks(blocks_of(sums), sums, [(maker_sums(held, left_ranges(then, now)), -1),
                                               (maker_sums(arrived, window_ranges(now)), 1)]
                       ).collect().row(0, named=True)
    # m5 now: b's buy of 4 and c's of 8; the sells that left sum to exactly nothing.
    assert (row["buys_m5"], row["sells_m5"], row["buy_volume_m5_usd"]) == (2, 0, 12.0)
    assert (row["sell_volume_m5_usd"], row["sellers_m5"], row["makers_m5"]) == (0.0, 0, 2)
    # h24 now: everything but d's sell.
    assert (row["txns_h24"], row["buys_h24"], row["sells_h24"], row["makers_h24"]) == (6, 3, 3, 4)
    assert row["sell_volume_h24_usd"] == pytest.approx(2.3)
    assert (row["sellers_h24"], row["buyers_h24"]) == (2, 3)


def test_the_fifteen_and_thirty_minute_windows_by_hand() -> None:
    minute = 60_000
    swaps = _swaps([
        (AS_OF_MS - 31 * minute, "buy", "a", 1.0, 2.0),      # in h1 alone; opens m30
        (AS_OF_MS - 30 * minute, "sell", "b", 2.0, 3.0),     # exactly 30 min: out of m30
        (AS_OF_MS - 29 * minute, "buy", "c", 4.0, 4.0),      # in m30; opens m15
        (AS_OF_MS - 15 * minute, "sell", "c", 8.0, 5.0),     # exactly 15 min: out of m15
        (AS_OF_MS - 14 * minute, "buy", "d", 16.0, 6.0),     # in m15
        (AS_OF_MS - 1 * minute, "buy", "a", 32.0, 8.0),      # in every window
    ])
    row = window_blocks(swaps, AS_OF_MS).collect().row(0, named=True)
    # m15: the buys 14 and 1 minutes old, by d and a.
    assert (row["txns_m15"], row["buys_m15"], row["sells_m15"], row["volume_m15_usd"],
            row["makers_m15"]) == (2, 2, 0, 48.0, 2)
    # m30: those and the two 29 and 15 minutes old, by c.
    assert (row["txns_m30"], row["buys_m30"], row["sells_m30"], row["volume_m30_usd"],
            row["buyers_m30"], row["sellers_m30"]) == (4, 3, 1, 60.0, 3, 1)
    assert (row["txns_h1"], row["txns_m5"]) == (6, 1)
    prices = window_prices(swaps, AS_OF_MS).collect().row(0, named=True)
    # A window opens at the last price at or before its start: 5 for m15, 3 for m30.
    assert prices["price_change_m15"] == (8.0 / 5.0 - 1.0) * 100.0
    assert prices["price_change_m30"] == (8.0 / 3.0 - 1.0) * 100.0
