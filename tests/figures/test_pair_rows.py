"""Pair-row pieces on tiny hand-made inputs, and the pair row's meaning rules broken one by one."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import polars as pl
import pytest

from checks.outcome import validate
from checks.schemas.market import PairRow
from figures.pair_rows import (
    around,
    deployer_reputation,
    holding,
    liquidity_range,
    lp_security,
    perp_blocks,
    perp_windows,
    window_prices,
)

AS_OF = datetime(2026, 11, 20, tzinfo=UTC)
TS = pl.Datetime("us", "UTC")


def test_window_prices_open_at_the_last_swap_before_each_window() -> None:
    times = [AS_OF - timedelta(hours=30), AS_OF - timedelta(hours=3),
             AS_OF - timedelta(minutes=30), AS_OF - timedelta(minutes=2)]
    legs = pl.LazyFrame({"chain_id": [1] * 4, "pair": ["p"] * 4,
                         "block_time": pl.Series(times, dtype=TS), "log_index": [0] * 4,
                         "price_usd": [1.0, 2.0, 4.0, 5.0], "side": ["buy", "sell"] * 2,
                         "maker_key": [1, 2, 1, 2], "volume_usd": [1.0] * 4})
    row = window_prices(legs, AS_OF).collect().row(0, named=True)
    # Last price 5. m5 opened at 4 (the 30-minute swap), h1 at 2, h6 at 1 (only the 30-hour swap
    # is older than six hours), h24 at 1.
    assert row["price_change_m5"] == 25.0 and row["price_change_h1"] == 150.0
    assert row["price_change_h6"] == 400.0 and row["price_change_h24"] == 400.0
    # The day's range leaves out the 30-hour-old swap.
    assert (row["range_low"], row["range_high"]) == (2.0, 5.0)
    assert row["range_low_at"] == times[1] and row["range_high_at"] == times[3]


def test_a_range_widens_to_hold_the_current_value_dated_as_of() -> None:
    day = [AS_OF - timedelta(hours=h) for h in (5, 3)]
    frame = pl.DataFrame({"low": [2.0, 2.0, 2.0, None], "high": [4.0, 4.0, 4.0, None],
                          "low_at": pl.Series([day[0]] * 3 + [None], dtype=TS),
                          "high_at": pl.Series([day[1]] * 3 + [None], dtype=TS),
                          "now": [3.0, 1.5, 6.0, 7.0]})
    rows = frame.with_columns(**holding("low", "high", "now", AS_OF)).rows(named=True)
    # 3 lies inside [2, 4]: unchanged. 1.5 is below: the low becomes 1.5, dated as_of. 6 is
    # above: the high becomes 6. A day without observations ranges over the current 7 alone.
    assert [(r["low"], r["high"]) for r in rows] == [(2.0, 4.0), (1.5, 4.0), (2.0, 6.0),
                                                     (7.0, 7.0)]
    assert [(r["low_at"], r["high_at"]) for r in rows] == [
        (day[0], day[1]), (AS_OF, day[1]), (day[0], AS_OF), (AS_OF, AS_OF)]


def test_around_takes_the_last_value_before_and_the_first_after_each_cutoff() -> None:
    # Pair p: values 1..4 at hours 50, 30, 10 and 1 before; pair q: one value 9 at hour 5.
    hours = {"p": [50, 30, 10, 1], "q": [5]}
    rows = [(pair, h, v) for pair, hs in hours.items() for h, v in
            zip(hs, [1.0, 2.0, 3.0, 4.0] if pair == "p" else [9.0], strict=True)]
    frame = pl.LazyFrame({"chain_id": [1] * len(rows), "pair": [r[0] for r in rows],
                          "block_time": pl.Series([AS_OF - timedelta(hours=r[1]) for r in rows],
                                                  dtype=TS),
                          "v": [r[2] for r in rows]})
    cutoffs = {"day": AS_OF - timedelta(hours=24), "hour": AS_OF - timedelta(hours=2),
               "week": AS_OF - timedelta(days=7)}
    got = {r["pair"]: r for r in around(frame, "block_time", ("v",), cutoffs)
           .collect().iter_rows(named=True)}
    p, q = got["p"], got["q"]
    assert (p["v_before_week"], p["v_before_day"], p["v_before_hour"]) == (None, 2.0, 3.0)
    assert (p["v_after_week"], p["v_after_day"], p["v_after_hour"]) == (1.0, 3.0, 4.0)
    # q's only value, 5 hours old, is after the week's and the day's cutoffs, before the hour's.
    assert (q["v_before_week"], q["v_before_day"], q["v_before_hour"]) == (None, None, 9.0)
    assert (q["v_after_week"], q["v_after_day"], q["v_after_hour"]) == (9.0, 9.0, None)


def test_a_range_reached_twice_is_dated_at_its_first_time() -> None:
    # Liquidity 2 x 5 quote units x 2 USD = 20 USD at hours 20 and 10 before, 60 at hours 15 and
    # 5 before; the rows come in no particular order.
    hours = [10, 15, 20, 5]
    reserves = pl.LazyFrame({"chain_id": [1] * 4, "pair": ["p"] * 4,
                             "block_time": pl.Series([AS_OF - timedelta(hours=h) for h in hours],
                                                     dtype=TS),
                             "reserve0": [1, 1, 1, 1], "reserve1": [5, 15, 5, 15]})
    pairs = pl.LazyFrame({"chain_id": [1], "pair": ["p"], "base_is_token0": [True],
                          "quote_decimals": [0], "quote_usd": [2.0]})
    row = liquidity_range(reserves, pairs, AS_OF).collect().row(0, named=True)
    assert (row["liq_low"], row["liq_high"]) == (20.0, 60.0)
    assert row["liq_low_at"] == AS_OF - timedelta(hours=20)
    assert row["liq_high_at"] == AS_OF - timedelta(hours=15)


def test_lp_security_shares_of_burned_and_locked_supply() -> None:
    events = pl.LazyFrame({"chain_id": [1, 1], "pair": ["p", "p"], "kind": ["mint", "burn"],
                           "liquidity": [Decimal(100), Decimal(20)],
                           "block_time": pl.Series([AS_OF - timedelta(days=2)] * 2, dtype=TS)})
    unlock = AS_OF + timedelta(days=30)
    locks = pl.LazyFrame({
        "chain_id": [1] * 4, "pair": ["p"] * 4, "kind": ["burn", "lock", "lock", "lock"],
        "provider": [None, "A", "B", "B"],
        "amount": [Decimal(8), Decimal(24), Decimal(16), Decimal(50)],
        "locked_at": pl.Series([AS_OF - timedelta(days=1)] * 4, dtype=TS),
        "unlock_at": pl.Series([None, unlock, unlock + timedelta(days=1),
                                AS_OF - timedelta(hours=1)], dtype=TS)})
    row = lp_security(events, locks, AS_OF).collect().row(0, named=True)
    # Supply 100 - 20 = 80; 8 burned = 10 %; 24 + 16 still locked = 50 % (B's 50 unlocked an
    # hour ago); A holds the larger live lock; the earliest unlock ahead is A's.
    assert row["burned_pct"] == 10.0 and row["locked_pct"] == 50.0
    assert row["top_lock_provider"] == "A" and row["earliest_unlock"] == unlock


def test_deployer_reputation_counts_scams_among_launches() -> None:
    pairs = pl.LazyFrame({"chain_id": [1] * 6, "pair": list("abcdef"),
                          "creator": ["x", "x", "x", "x", "y", "z"],
                          "created_at": pl.Series([AS_OF - timedelta(days=d)
                                                   for d in (1, 2, 3, 4, 1, 1)], dtype=TS)})
    risk = pl.LazyFrame({"chain_id": [1] * 6, "pair": list("abcdef"),
                         "is_scam": [True, False, False, False, False, True]})
    rows = {r["creator"]: r for r in deployer_reputation(pairs, risk).collect().iter_rows(
        named=True)}
    assert (rows["x"]["pairs_created"], rows["x"]["abused_launches"]) == (4, 1)
    assert (rows["x"]["rep_score"], rows["x"]["rep_status"]) == (75, "suspicious")
    assert (rows["y"]["rep_score"], rows["y"]["rep_status"]) == (100, "clean")
    assert (rows["z"]["rep_score"], rows["z"]["rep_status"]) == (0, "abuser")
    assert rows["x"]["first_seen_at"] == AS_OF - timedelta(days=4)


def good_rows() -> pl.DataFrame:
    """Three pair rows that follow every rule: ok, blocked and unresolved."""
    return pl.DataFrame({
        "chain_id": [1, 1, 2], "slug": ["a", "a", "b"], "pair": ["p", "q", "p"],
        "ticker": ["X/Y"] * 3, "base": ["x"] * 3, "quote": ["y"] * 3,
        "liquidity_usd": [10.0, 5.0, None], "volume_h24_usd": [3.0, 0.0, 0.0],
        "txns_h24": [4, 0, 0], "makers_h24": [2, 0, 0], "price_change_h24": [1.0, 0.0, 0.0],
        "score": [90, 0, 100], "verdict": ["ok", "blocked", "unknown"],
        "status": ["active", "rugged", "unresolved"], "is_perp": [False] * 3,
        "launchpad": [None, "pad", "pad"], "launchpad_stage": [None, "curve", "migrated"],
        "curve_progress": [None, 0.4, 1.0], "is_scam": [False, True, False],
        "item": ['{"network":{},"verdict":{"status":"ok"},'
                 '"volume":{"m5":0.0,"h1":2.5,"h6":3.0,"h24":3.0},'
                 '"txn":{"m5":{"buy_volume":0.0,"sell_volume":0.0},'
                 '"h1":{"buy_volume":2.0,"sell_volume":0.5},'
                 '"h6":{"buy_volume":2.0,"sell_volume":1.0},'
                 '"h24":{"buy_volume":2.0,"sell_volume":1.0}},"tokens":['
                 '{"price_usd":2.0,"price_range":{"low":1.0,"high":3.0}},'
                 '{"price_usd":1.0,"price_range":{"low":1.0,"high":1.0}}]}',
                 '{"network":{},"verdict":{"status":"blocked"}}',
                 '{"network":{},"verdict":{"status":"unknown"}}']})


def test_good_pair_rows_pass() -> None:
    assert validate("pair_rows", PairRow, good_rows()).passed


def test_each_pair_rule_fails_when_broken() -> None:
    broken = {
        "scams_are_blocked": pl.Series([True, True, False]).alias("is_scam"),
        "unresolved_pairs_are_unknown": pl.Series(["ok", "blocked", "ok"]).alias("verdict"),
        "the_item_carries_the_verdict": pl.col("item").str.replace("blocked", "watch"),
        "makers_cover_the_day": pl.Series([2, 0, 1]).alias("makers_h24"),
        "token_prices_lie_in_their_ranges": pl.col("item").str.replace('"price_usd":2.0',
                                                                      '"price_usd":3.5'),
        # A perp's notional in its volume, with no buys or sells to add up to it.
        "window_volume_is_buys_plus_sells": pl.col("item").str.replace('"h6":3.0',
                                                                       '"h6":1000.0'),
        # Migrated, yet not all the way; then a progress on a pair no launchpad made.
        "a_graduated_curve_is_all_the_way": pl.Series([None, 0.4, 0.9]).alias("curve_progress"),
    }
    for rule, change in broken.items():
        frame = good_rows().with_columns(change)
        outcome = validate("pair_rows", PairRow, frame)
        assert not outcome.passed, rule
        assert rule in outcome.summary(), (rule, outcome.summary())
    stray = good_rows().with_columns(pl.Series([0.5, 0.4, 1.0]).alias("curve_progress"))
    assert "a_graduated_curve_is_all_the_way" in validate("pair_rows", PairRow, stray).summary()
    duplicated = pl.concat([good_rows(), good_rows().head(1)])
    assert not validate("pair_rows", PairRow, duplicated).passed


def test_a_perp_row_shows_its_markets_funding_mark_and_notional_volume_in_its_block() -> None:
    observed = [AS_OF - timedelta(hours=h) for h in (30, 2, 0.5, 0)]
    snapshots = pl.LazyFrame({
        "chain_id": [9] * 4, "market": ["m"] * 4, "observed_at": pl.Series(observed, dtype=TS),
        "mark_price": [80.0, 100.0, 110.0, 120.0], "oracle_price": [80.0, 100.0, 110.0, 100.0],
        "oi_long_usd": [1.0, 1.0, 1.0, 300.0], "oi_short_usd": [1.0, 1.0, 1.0, 100.0],
        "funding_long_1h": [0.0, 0.0, 0.0, 0.0002], "funding_short_1h": [0.0, 0.0, 0.0, -0.0002],
        "volume_usd": [1000.0, 40.0, 20.0, 10.0]})
    markets = pl.LazyFrame({"chain_id": [9], "market": ["m"], "max_leverage": [20.0],
                            "only_isolated": [False]})
    block = perp_blocks(markets, snapshots, AS_OF).collect().row(0, named=True)["perp"]
    # Longs pay 0.02 % an hour (shorts receive it): the rate is the long side's, not their mean.
    assert block["funding_rate"] == 0.0002 and block["open_interest_usd"] == 400.0
    assert block["premium"] == pytest.approx(0.2) and block["day_notional_volume"] == 70.0
    row = perp_windows(snapshots, AS_OF).collect().row(0, named=True)
    # Mark now 120. Each window opens at the last mark at or before its start: m5 at 110 (30
    # minutes ago), h1 at 100 (2 hours ago), h6 and h24 at 80 (30 hours ago).
    assert row["perp_mark"] == 120.0
    assert row["perp_change_m5"] == pytest.approx(120 / 110 * 100 - 100)
    assert row["perp_change_h1"] == pytest.approx(20.0)
    assert row["perp_change_h6"] == pytest.approx(50.0) and row["perp_change_h24"] == 50.0
    # The notional has no taker side: it is the block's alone, never the windows' volume.
    assert not any(c.startswith("perp_volume") for c in row)
