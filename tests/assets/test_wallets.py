"""Wallet accounting on hand-made ledgers: buys and sells at known prices, a partial exit, a
transfer in, a re-entry, a token without a price and an oversold sell, with every expected
figure worked out by hand below; and funding clusters, by hand."""

import hashlib
import math
import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from assets.wallets.behaviour import wallet_traits
from assets.wallets.books import ahead
from assets.wallets.funding import assemble_funding
from assets.wallets.positions import assemble_positions, assemble_rounds
from assets.wallets.profiles import funding_clusters
from assets.wallets.windows import assemble_windows
from checks.outcome import validate
from checks.schemas.wallets import (
    LedgerRow,
    PositionRow,
    RoundRow,
    WalletWindow,
    positions_add_up,
)
from core.fingerprints import keyed
from figures.ledger import (
    account_onto,
    books_after,
    chain_halves,
    chain_order,
    latest_books,
    marked,
    movement_events,
    token_marks,
    touched_positions,
    wallet_events,
    with_swap_hashes,
)


def account(events: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Events accounted from empty books, with their rows' position numbers."""
    return account_onto(events, None)[0]


W, V, T, U = "0xw", "0xv", "0xt", "0xu"


def events(rows: list[tuple]) -> pl.LazyFrame:
    """(wallet, token, side, qty, notional_usd, mark_usd) in chain order, a block each."""
    return pl.DataFrame(
        [{"chain_id": 1, "wallet": w, "token": t, "side": s, "qty": q, "notional_usd": n,
          "mark_usd": m, "block_number": i + 1, "log_index": 0, "seq": 0, "ts": 1_000 * (i + 1),
          "price_usd": None if n is None or s.startswith("transfer") else n / q,
          "fee_usd": None, "fee_is_estimated": False}
         for i, (w, t, s, q, n, m) in enumerate(rows)],
        schema_overrides={"notional_usd": pl.Float64, "mark_usd": pl.Float64,
                          "price_usd": pl.Float64, "fee_usd": pl.Float64}).lazy()


BOOK = [
    (W, T, "buy", 100.0, 100.0, 1.0),          # held 100, cost 100
    (W, T, "buy", 100.0, 300.0, 3.0),          # held 200, cost 400 (2 a unit)
    (W, T, "sell", 50.0, 150.0, 3.0),          # takes 50 x 2 = 100 of cost: +50; held 150, 300
    (W, T, "transfer_in", 50.0, None, 4.0),    # no price: enters at its value, 50 x 4 = 200
    (W, T, "sell", 200.0, 1000.0, 5.0),        # all out: cost 500 leaves, +500; round 0 closes
    (W, T, "buy", 10.0, 60.0, 6.0),            # round 1: held 10, cost 60
    (W, U, "buy", 10.0, None, None),           # U has no price anywhere: no cost at all
    (W, U, "sell", 5.0, None, None),
    (V, T, "sell", 10.0, 50.0, 5.0),           # V sells what the ledger never saw arrive
]


@pytest.fixture(scope="module")
def ledger() -> pl.DataFrame:
    return account(events(BOOK))


def test_average_cost_realises_each_sell_against_the_running_basis(ledger) -> None:
    t = ledger.filter(pl.col("wallet") == W, pl.col("token") == T)
    assert t["held"].to_list() == pytest.approx([100, 200, 150, 200, 0, 10])
    assert t["cost"].to_list() == pytest.approx([100, 400, 300, 500, 0, 60])
    assert t["realized_usd"].to_list() == pytest.approx([0, 0, 50, 0, 500, 0])
    assert t["cost_closed_usd"].to_list() == pytest.approx([0, 0, 100, 0, 500, 0])
    assert t["round"].to_list() == [0, 0, 0, 0, 0, 1]
    assert t["closes"].to_list() == [False, False, False, False, True, False]
    assert t["incomplete"].to_list() == [False, False, False, True, False, False]


def test_a_buy_without_a_usd_price_and_a_transfer_in_are_charged_their_mark() -> None:
    # Neither has a USD notional: 10 units at a mark of 7 cost 70, then 10 at 2 add 20.
    t = account(events([(W, T, "buy", 10.0, None, 7.0),
                        (W, T, "transfer_in", 10.0, None, 2.0)]))
    assert t["held"].to_list() == pytest.approx([10, 20])
    assert t["cost"].to_list() == pytest.approx([70, 90])
    assert t["cost_in_usd"].to_list() == pytest.approx([70, 20])
    assert t["incomplete"].to_list() == [True, True]


def test_a_day_accounted_from_the_books_the_day_before_left_continues_them() -> None:
    # The week's first three rows on day 1, the rest on day 2. Day 2 starts from day 1's books:
    # W holds 150 T at a cost of 300 in round 0, so the transfer in adds 50 x 4 = 200 (held
    # 200, cost 500) and the sell of 200 closes round 0 (+500), as when accounted at once.
    day1, after = account_onto(events(BOOK[:3]), None)
    assert after.height == 1
    w_t = keyed_position(W, T)
    assert after.filter(pl.col("position") == w_t).select(
        "net_qty", "low_qty", "came_qty", "held", "cost", "running_cost", "closed_rounds",
        "round", "round_opened_at").row(0) == (150.0, 0.0, 200.0, 150.0, 300.0, 300.0, 0, 0,
                                               1_000)
    day2, end = account_onto(events(BOOK).collect().slice(3).lazy(), after)
    t = day2.filter(pl.col("wallet") == W, pl.col("token") == T)
    assert t["held"].to_list() == pytest.approx([200, 0, 10])
    assert t["cost"].to_list() == pytest.approx([500, 0, 60])
    assert t["realized_usd"].to_list() == pytest.approx([0, 500, 0])
    assert t["round"].to_list() == [0, 0, 1]
    assert t["round_opened_at"].to_list() == [1_000, 1_000, 6_000]
    # V's oversold sell and W's U, new on day 2, start from empty books; every position's
    # books at the end are those of the week accounted at once, whether carried forward or
    # read back from the days' closing books.
    assert day2.filter(pl.col("wallet") == V)["realized_usd"].to_list() == [0.0]
    whole, at_once = account_onto(events(BOOK), None)
    assert books_after(after, end).sort("position").equals(at_once.sort("position"))
    assert latest_books(pl.concat([after, end]).lazy()).sort("position").equals(
        at_once.sort("position"))
    assert pl.concat([day1, day2]).drop("slot").equals(whole.drop("slot"))
    # Day 2 accounted from the books of only the positions it touches gives the same ledger.
    touched = touched_positions(events(BOOK).collect().slice(3))
    assert sorted(touched.to_list()) == sorted(
        {keyed_position(w, t) for w, t, *_ in BOOK[3:]})
    only = latest_books(after.lazy(), touched)
    assert only["position"].to_list() == [w_t]
    day2_only, end_only = account_onto(events(BOOK).collect().slice(3).lazy(), only)
    assert day2_only.equals(day2) and end_only.equals(end)


def test_the_latest_books_of_some_positions_are_each_ones_last_days() -> None:
    # Position 1 closes on both days (its day 2 books count), 2 on day 1 only, 3 on day 2
    # only; asked for 1 and 2, the books are day 2's of 1 and day 1's of 2, and nothing of 3.
    day1 = pl.DataFrame({"chain_id": [1, 1], "position": [1, 2], "held": [10.0, 20.0]})
    day2 = pl.DataFrame({"chain_id": [1, 1], "position": [3, 1], "held": [30.0, 11.0]})
    asked = pl.Series("position", [2, 1])
    found = latest_books(pl.concat([day1, day2]).lazy(), asked).sort("position")
    assert found.rows() == [(1, 1, 11.0), (1, 2, 20.0)]
    assert latest_books(pl.concat([day1, day2]).lazy()).height == 3


def keyed_position(wallet: str, token: str) -> int:
    """A position's fingerprint on chain 1, as the ledger keys it."""
    return pl.DataFrame({"chain_id": [1], "wallet": [wallet], "token": [token]}).select(
        keyed("chain_id", "wallet", "token")).item()


def test_a_days_marks_come_from_its_swaps_and_else_from_the_day_before() -> None:
    # Day 1 left T at 2.0 and U at 5.0. On day 2 T swaps at 3.0 at ts 20: a row at 10 is
    # marked 2.0 (the day before), one at 25 is marked 3.0; U keeps 5.0; V has no mark at all.
    before = pl.DataFrame({"chain_id": [1, 1], "token": [T, U], "mark_usd": [2.0, 5.0]})
    swaps = pl.DataFrame({"chain_id": [1], "token": [T], "ts": [20], "price_usd": [3.0]})
    rows = pl.DataFrame({"chain_id": [1, 1, 1, 1], "token": [T, T, U, V], "ts": [10, 25, 25, 25],
                         "n": [0, 1, 2, 3]})
    got = marked(rows.lazy(), swaps.lazy(), before).collect().sort("n")
    assert got["mark_usd"].to_list() == [2.0, 3.0, 5.0, None]
    # At the day's end T is 3.0 (its swap), U still 5.0.
    day = swaps.with_columns(wallet=pl.lit(W))
    assert token_marks(day, before).rows() == [(1, T, 3.0), (1, U, 5.0)]


def test_a_mark_is_the_last_priced_swap_price_at_or_before_the_row() -> None:
    swaps = pl.DataFrame({"chain_id": [1, 1, 1, 2], "token": [T, T, T, T],
                          "ts": [10, 20, 30, 1], "price_usd": [2.0, None, 3.0, 9.0]})
    rows = pl.DataFrame({"chain_id": [1, 1, 1, 1, 1], "token": [T, T, T, T, U],
                         "ts": [5, 10, 25, 30, 30], "n": [0, 1, 2, 3, 4]})
    got = marked(rows.lazy(), swaps.lazy()).collect().sort("n")
    # Before any price: none; the unpriced swap at 20 is passed over; chain 2's T is another
    # token; U never had a price.
    assert got["mark_usd"].to_list() == [None, 2.0, 2.0, 3.0, None]


def test_an_oversold_sell_breaks_even_and_marks_the_basis_incomplete(ledger) -> None:
    v = ledger.filter(pl.col("wallet") == V).row(0, named=True)
    assert (v["held"], v["realized_usd"], v["cost_closed_usd"], v["incomplete"]) == \
        (0.0, 0.0, 0.0, True)


def test_two_chains_are_accounted_apart_and_numbered_one_after_the_other() -> None:
    # Chain 56 after the book of chain 1: the rows split between the two chains, each half
    # accounted on its own. W buys 10 T for 200 and sells 5 for 150 (5 x 20 = 100 of cost
    # leaves: +50); V buys 4 U for 8.
    other = events([(W, T, "buy", 10.0, 200.0, 20.0), (W, T, "sell", 5.0, 150.0, 30.0),
                    (V, U, "buy", 4.0, 8.0, 2.0)]).collect().with_columns(chain_id=pl.lit(56, pl.Int64))
    both = pl.concat([events(BOOK).collect(), other])
    assert chain_halves(both["chain_id"].to_numpy()) == (slice(0, 9), slice(9, 12))
    ledger = account(both)
    # Chain 1's positions W-T, W-U, V-T are 0, 1, 2 in the order of their first rows; chain 56's
    # W-T and V-U follow as 3 and 4.
    assert ledger["slot"].to_list() == [0] * 6 + [1, 1, 2] + [3, 3, 4]
    tail = ledger.filter(pl.col("chain_id") == 56)
    assert tail["held"].to_list() == pytest.approx([10, 5, 4])
    assert tail["cost"].to_list() == pytest.approx([200, 100, 8])
    assert tail["realized_usd"].to_list() == pytest.approx([0, 50, 0])
    head = ledger.filter(pl.col("chain_id") == 1, pl.col("wallet") == W, pl.col("token") == T)
    assert head["realized_usd"].to_list() == pytest.approx([0, 0, 50, 0, 500, 0])


@pytest.mark.parametrize(("chains", "cut"), [
    ([1, 1, 1, 2, 2, 2, 2, 3], 3),   # chains start at rows 3 and 7: 3 is nearer the middle, 4
    ([7, 7, 7], 0),                  # one chain: nothing to split
    ([56, 56, 1, 1], 0),             # not in rising order: a chain might come back later
])
def test_chain_halves_split_between_whole_chains_nearest_the_middle(chains, cut) -> None:
    assert chain_halves(np.array(chains)) == (slice(0, cut), slice(cut, len(chains)))


def tokens(price_t: float, status_t: int = 0) -> pl.DataFrame:
    return pl.DataFrame({"chain_id": [1, 1], "address": [T, U], "symbol": ["T", "U"],
                         "price_usd": [price_t, None], "rating_score": [70, 10],
                         "token_status": [status_t, 0]})


def test_positions_average_rounds_together_and_mark_the_open_holding(ledger) -> None:
    positions = assemble_positions(ledger, tokens(7.0))
    t = positions.filter(pl.col("wallet") == W, pl.col("token") == T).row(0, named=True)
    assert (t["buys"], t["sells"], t["transfers_in"], t["rounds"]) == (3, 2, 1, 2)
    assert t["bought_usd"] == pytest.approx(460)
    assert t["sold_usd"] == pytest.approx(1150)
    assert t["avg_entry_price_usd"] == pytest.approx(460 / 210)
    assert t["avg_exit_price_usd"] == pytest.approx(1150 / 250)
    assert t["realized_usd"] == pytest.approx(550)
    assert t["realized_roi"] == pytest.approx(550 / 600)
    # 10 held at 7 against 60 of cost.
    assert t["unrealized_usd"] == pytest.approx(10)
    assert t["total_pnl_usd"] == pytest.approx(560)
    assert t["basis_is_incomplete"] and t["tracked"] and t["token_score"] == 70
    u = positions.filter(pl.col("token") == U).row(0, named=True)
    assert not u["tracked"]
    assert (u["realized_usd"], u["unrealized_usd"]) == (0.0, 0.0)


def test_a_condemned_token_is_marked_at_zero_whatever_its_score(ledger) -> None:
    positions = assemble_positions(ledger, tokens(7.0, status_t=999))
    t = positions.filter(pl.col("wallet") == W, pl.col("token") == T).row(0, named=True)
    assert t["condemned"] and t["token_score"] == 70
    assert t["unrealized_usd"] == pytest.approx(-60)
    assert validate("wallet_positions", PositionRow, positions).passed


def test_a_negative_holding_or_cost_basis_fails_the_position_and_round_checks(ledger) -> None:
    # Below zero (beyond a cent of float dust for money) is an accounting fault, open or closed.
    # A first row taken a unit or a dollar below zero: exactly that row fails.
    positions = assemble_positions(ledger, tokens(7.0))
    rounds = assemble_rounds(ledger, as_of_s=20_000)
    for frame, model, columns in ((positions, PositionRow, ("open_cost_usd", "cost_closed_usd")),
                                  (rounds, RoundRow, ("held", "open_cost_usd"))):
        assert validate("wallet_books", model, frame).passed
        for column in columns:
            broken = frame.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(-1.0)
                                        .otherwise(pl.col(column)).alias(column))
            outcome = validate("wallet_books", model, broken)
            assert not outcome.passed and outcome.failure_count == 1, column


def test_rounds_run_from_first_unit_in_to_last_unit_out(ledger) -> None:
    rounds = assemble_rounds(ledger, as_of_s=20_000).filter(
        pl.col("wallet") == W, pl.col("token") == T).sort("round")
    first, second = rounds.rows(named=True)
    assert (first["opened_at"], first["closed_at"], first["hold_seconds"]) == (1000, 5000, 4000)
    assert first["realized_usd"] == pytest.approx(550) and not first["is_open"]
    assert first["closed_by_sell"]
    assert (second["opened_at"], second["closed_at"], second["is_open"]) == (6000, None, True)
    assert second["hold_seconds"] == 14_000
    assert second["open_cost_usd"] == pytest.approx(60)



def test_a_sell_while_nothing_is_held_counts_on_the_position_and_in_no_round() -> None:
    # V sells 5 before holding any, buys 10 for 20 and sells them for 30 (round 0, from 2000
    # to 3000), sells 5 more (none held again), then buys 4 for 8 (round 1 opens at 5000).
    ledger = account(events([
        (V, T, "sell", 5.0, 10.0, 2.0), (V, T, "buy", 10.0, 20.0, 2.0),
        (V, T, "sell", 10.0, 30.0, 3.0), (V, T, "sell", 5.0, 15.0, 3.0),
        (V, T, "buy", 4.0, 8.0, 2.0)]))
    assert ledger["round"].to_list() == [-1, 0, 0, -1, 1]
    rounds = assemble_rounds(ledger, as_of_s=9_000).sort("round")
    first, second = rounds.rows(named=True)
    # Round 0 is its buy and its closing sell only: +10 on a cost of 20, complete.
    assert (first["buys"], first["sells"], first["opened_at"], first["closed_at"]) == \
        (1, 1, 2000, 3000)
    assert first["sold_qty"] == pytest.approx(10)
    assert first["realized_usd"] == pytest.approx(10)
    assert not first["basis_is_incomplete"]
    assert (second["buys"], second["sells"], second["opened_at"], second["is_open"]) == \
        (1, 0, 5000, True)
    assert second["hold_seconds"] == 4000
    assert validate("wallet_books", RoundRow, rounds).passed
    # The position has every sell: three, 20 sold, and an incomplete basis.
    position = assemble_positions(ledger, tokens(2.0)).row(0, named=True)
    assert (position["buys"], position["sells"], position["rounds"]) == (2, 3, 2)
    assert position["sold_qty"] == pytest.approx(20)
    assert position["basis_is_incomplete"]

def test_a_thousand_partial_exits_in_one_round_keep_the_average_cost() -> None:
    # One unit at 1 USD, then a thousand times: sell half, buy it back, always at 1 USD. The
    # basis is halved a thousand times over (2^-1000 of it left from the first buy), yet the
    # average cost stays 1 and nothing is realised.
    rows = [(W, T, "buy", 1.0, 1.0, 1.0)]
    for _ in range(1000):
        rows += [(W, T, "sell", 0.5, 0.5, 1.0), (W, T, "buy", 0.5, 0.5, 1.0)]
    ledger = account(events(rows))
    assert ledger["cost"][-1] == pytest.approx(1.0)
    assert ledger["realized_usd"].abs().max() == pytest.approx(0.0, abs=1e-9)
    assert not any(math.isnan(c) for c in ledger["cost"])


def test_peak_capital_is_the_most_cost_open_at_once_across_tokens() -> None:
    # W: T for 100 (100 open), U for 50 (150), half of T out (100), all of T out (50), U for
    # 30 more (80). V: one T for 20, sold (20 at most).
    rows = [(W, T, "buy", 10.0, 100.0, 10.0), (W, U, "buy", 5.0, 50.0, 10.0),
            (W, T, "sell", 5.0, 60.0, 12.0), (W, T, "sell", 5.0, 60.0, 12.0),
            (W, U, "buy", 3.0, 30.0, 10.0), (V, T, "buy", 2.0, 20.0, 10.0),
            (V, T, "sell", 2.0, 30.0, 15.0)]
    pools = pl.DataFrame({"chain_id": [1], "pair": ["P"], "created_at": [AT]})
    ledger = account(events(rows)).with_columns(pair=pl.lit("P"))
    peaks = dict(wallet_traits(ledger, pools).select("wallet", "deployed_usd").rows())
    assert peaks == pytest.approx({W: 150.0, V: 20.0})


def window_row(**overrides) -> pl.DataFrame:
    base = {"chain_id": 1, "wallet": W, "window": "30d", "realized_pnl_usd": 50.0,
            "unrealized_pnl_usd": 10.0, "total_pnl_usd": 60.0, "gross_profit_usd": 80.0,
            "gross_loss_usd": 30.0, "invested_usd": 100.0, "volume_usd": 300.0,
            "win_rate": 0.0, "trade_win_rate": 0.5, "trades": 4, "winning_trades": 1,
            "losing_trades": 1, "tokens_traded": 2, "rated_positions": 1,
            "excluded_no_outcome": 1, "excluded_untracked": 0, "closed_positions": 1,
            "open_positions": 1}
    return pl.DataFrame([{**base, **overrides}])


@pytest.mark.parametrize("broken", [
    {"total_pnl_usd": 61.0},                      # total is not realised + unrealised
    {"win_rate": 1.0},                            # a win rate from one rated position
    {"realized_pnl_usd": 40.0, "total_pnl_usd": 50.0},  # realised is not profit less loss
    {"excluded_no_outcome": 0},                   # a traded token neither rated nor excluded
    {"winning_trades": 5},                        # more winning exits than trades
])
def test_each_window_rule_fails_when_broken(broken) -> None:
    assert validate("wallet_windows", WalletWindow, window_row()).passed
    assert not validate("wallet_windows", WalletWindow, window_row(**broken)).passed


def test_the_lifetime_record_must_equal_the_sums_over_positions(ledger) -> None:
    positions = assemble_positions(ledger, tokens(7.0)).filter(pl.col("wallet") == W)
    # By hand: T realised 550 and unrealised 10 (10 held at 7 on 60 of cost), U nothing;
    # bought 460 in priced buys; 7 swaps over 2 tokens.
    lifetime = {"chain_id": 1, "wallet": W, "window": "all", "realized_pnl_usd": 550.0,
                "unrealized_pnl_usd": 10.0, "invested_usd": 460.0, "trades": 7,
                "tokens_traded": 2}
    profiles = pl.DataFrame({"chain_id": [1], "wallet": [W], "rebuild_skipped": [False]})
    assert positions_add_up(pl.DataFrame([lifetime]), positions, profiles).is_empty()
    off = pl.DataFrame([{**lifetime, "realized_pnl_usd": 549.0}])
    assert positions_add_up(off, positions, profiles).height == 1
    skipped = profiles.with_columns(rebuild_skipped=pl.lit(True))
    assert positions_add_up(off, positions, skipped).is_empty()


def test_window_records_count_each_position_in_every_window_it_swapped_in() -> None:
    # W buys T 500, 200 and 20 days ago (10, 20 and 40 USD for a unit each), buys 10 X for 100
    # 5 days ago and sells them for 50 a day later (-50 on 100 of cost, a round held a day),
    # sells one of three T 3 days ago for 30 (average cost 70 / 3, so 20 / 3 realised), buys
    # 10 U without any price 2 days ago and one more T for 80 12 hours ago. V receives a T by
    # transfer 10 days ago. T is worth 50 now: W holds 3 T against 140 / 3 + 80 of cost.
    day, now = 86_400, 100_000_000
    X = "0xx"
    rows = [(W, T, "buy", 1.0, 10.0, 10.0), (W, T, "buy", 1.0, 20.0, 20.0),
            (W, T, "buy", 1.0, 40.0, 40.0), (V, T, "transfer_in", 1.0, None, 40.0),
            (W, X, "buy", 10.0, 100.0, 10.0), (W, X, "sell", 10.0, 50.0, 5.0),
            (W, T, "sell", 1.0, 30.0, 30.0), (W, U, "buy", 10.0, None, None),
            (W, T, "buy", 1.0, 80.0, 80.0)]
    ages = [500 * day, 200 * day, 20 * day, 10 * day, 5 * day, 4 * day, 3 * day, 2 * day,
            day // 2]
    ledger = account(events(rows).with_columns(ts=pl.Series([now - a for a in ages])))
    records = assemble_windows(ledger, now, assemble_positions(ledger, tokens(50.0)))
    assert validate("wallet_windows", WalletWindow, records).passed
    w = {r["window"]: r for r in records.filter(pl.col("wallet") == W).iter_rows(named=True)}
    windows = ("1d", "7d", "30d", "1y", "all")
    assert list(w) == list(windows)
    open_pnl = 3 * 50 - (140 / 3 + 80)
    # 12 hours: only the last T buy, which has no outcome yet.
    day_record = w["1d"]
    assert (day_record["trades"], day_record["tokens_traded"], day_record["rated_positions"],
            day_record["excluded_no_outcome"], day_record["open_positions"]) == (1, 1, 0, 1, 1)
    assert day_record["realized_pnl_usd"] == 0
    assert day_record["unrealized_pnl_usd"] == pytest.approx(open_pnl)
    assert (day_record["roi"], day_record["median_roi"], day_record["profit_factor"]) == (
        0, 0, None)
    # A week: T and X are rated (one winner, one loser), U is untracked.
    week = w["7d"]
    realized = 20 / 3 - 50
    assert week["realized_pnl_usd"] == pytest.approx(realized)
    assert week["total_pnl_usd"] == pytest.approx(realized + open_pnl)
    assert week["rated_pnl_usd"] == pytest.approx(20 / 3 + open_pnl - 50)
    assert (week["gross_profit_usd"], week["gross_loss_usd"]) == pytest.approx((20 / 3, 50))
    assert week["roi"] == pytest.approx(realized / (70 / 3 + 100))
    assert week["median_roi"] == pytest.approx(((20 / 3) / (70 / 3) - 0.5) / 2)
    assert week["profit_factor"] == pytest.approx((20 / 3) / 50)
    assert (week["winning_trades"], week["losing_trades"], week["trade_win_rate"]) == (1, 1, 0.5)
    assert (week["rated_positions"], week["winning_positions"], week["win_rate"]) == (2, 1, 0)
    assert (week["tokens_traded"], week["open_positions"], week["closed_positions"]) == (3, 2, 1)
    assert (week["excluded_untracked"], week["excluded_no_outcome"]) == (1, 0)
    assert week["avg_hold_seconds"] == day
    assert week["avg_trade_usd"] == pytest.approx((80 + 30 + 100 + 50) / 5)
    # Longer windows add the older T buys.
    assert [w[x]["trades"] for x in windows] == [1, 5, 6, 7, 8]
    assert [w[x]["invested_usd"] for x in windows] == pytest.approx([80, 180, 220, 240, 250])
    assert [w[x]["volume_usd"] for x in windows] == pytest.approx([80, 260, 300, 320, 330])
    # V only received T by transfer: a record from the month on, which traded nothing.
    v = records.filter(pl.col("wallet") == V)
    assert v["window"].to_list() == ["30d", "1y", "all"]
    assert v["excluded_transfer_only"].to_list() == [1, 1, 1]
    assert v["trades"].to_list() == v["tokens_traded"].to_list() == [0, 0, 0]


def accounted_rows(sides: list[str], hashes: list) -> pl.DataFrame:
    """Ledger rows that break no accounting rule: a unit of a token in or out at no price."""
    n = len(sides)
    return pl.DataFrame({
        "chain_id": [1] * n, "block_number": [5, 6, 7][:n], "log_index": [0] * n,
        "wallet": [W] * n, "token": [T] * n, "side": sides, "qty": [1.0] * n, "held": [1.0] * n,
        "cost": [0.0] * n, "realized_usd": [0.0] * n, "cost_closed_usd": [0.0] * n,
        "fee_is_estimated": [False] * n, "price_usd": [None] * n, "notional_usd": [None] * n,
        "fee_usd": [None] * n,
        "seq": pl.Series([{"transfer_out": 1, "transfer_in": 2}.get(x, 0) for x in sides],
                         dtype=pl.UInt8),
        "tx_hash": pl.Series(hashes, dtype=pl.String)},
        schema_overrides={c: pl.Float64 for c in ("price_usd", "notional_usd", "fee_usd")})


def test_a_movement_keeps_its_hash_and_a_swap_reads_its_own_from_the_lake() -> None:
    good = accounted_rows(["buy", "transfer_out"], [None, "0xm"])
    assert validate("wallet_ledger", LedgerRow, good).passed
    for side in ("transfer_in", "transfer_out"):
        outcome = validate("wallet_ledger", LedgerRow, accounted_rows([side], [None]))
        assert outcome.failures["check"].to_list() == ["each_event_names_its_transaction"]


def test_no_two_ledger_rows_share_an_event_end() -> None:
    rows = accounted_rows(["buy", "transfer_out", "sell"], [None, "0xm", None])
    assert validate("wallet_ledger", LedgerRow, rows).passed
    # Out of chain order but distinct: counted, not proved by order, and still passes.
    assert validate("wallet_ledger", LedgerRow, rows.reverse()).passed
    # The sell moved onto the buy's block: two swaps (seq 0) of one event.
    twice = rows.with_columns(block_number=pl.Series([5, 6, 5]))
    outcome = validate("wallet_ledger", LedgerRow, twice)
    assert outcome.failures["check"].to_list() == ["one_row_per_event_end"] * 2


def test_trades_take_the_swaps_hashes_from_the_lake_and_keep_the_movements_own() -> None:
    # The lake's swaps: blocks 4, 5 and 7 of chain 1, and chain 2's block 5; the ledger's buy
    # is chain 1's block 5 and its sell block 7; the transfer at block 6 carries its own hash.
    lake = pl.LazyFrame({"chain_id": [1, 1, 2, 1], "block_number": [4, 5, 5, 7],
                         "log_index": [0, 0, 0, 0], "tx_hash": ["0xa", "0xb", "0xd", "0xc"]})
    ledger = accounted_rows(["buy", "transfer_in", "sell"], [None, "0xm", None])
    got = with_swap_hashes(ledger, lake).sort("block_number")
    assert got.select("block_number", "tx_hash").rows() == [(5, "0xb"), (6, "0xm"), (7, "0xc")]
    # Swaps written since in front of these, on this chain and another, move nothing.
    grown = pl.concat([pl.LazyFrame({"chain_id": [2, 1], "block_number": [1, 3],
                                     "log_index": [0, 0], "tx_hash": ["0xy", "0xz"]}), lake])
    assert with_swap_hashes(ledger, grown).sort("block_number").equals(got)
    # A lake written again without the sell's swap is refused, not read as no hash.
    with pytest.raises(ValueError, match="materialise swap_legs again"):
        with_swap_hashes(ledger, lake.filter(pl.col("block_number") != 7))


AT = datetime(2026, 11, 1, tzinfo=UTC)


def movement_frames() -> dict[str, pl.LazyFrame]:
    """T (6 decimals) moves twice in block 9: 2 units from W to V, then 5 units from W to W;
    no pool and no liquidity."""
    return {
        "transfers": pl.LazyFrame({
            "chain_id": [1, 1], "block_number": [9, 9], "log_index": [1, 2],
            "block_time": [AT] * 2, "tx_hash": ["0x1", "0x2"], "token": [T, T],
            "from_address": [W, W], "to_address": [V, W], "amount": [2_000_000, 5_000_000]}),
        "tokens": pl.LazyFrame({"chain_id": [1], "address": [T], "decimals": [6],
                                "is_quote": [False], "deploy_tx": ["0x0"]}),
        "liquidity_events": pl.LazyFrame(schema={
            "chain_id": pl.Int64, "block_number": pl.Int64, "log_index": pl.Int64,
            "block_time": pl.Datetime("us", "UTC"), "tx_hash": pl.String, "pair": pl.String,
            "owner": pl.String, "kind": pl.String, "amount0": pl.Int64, "amount1": pl.Int64}),
        "pair_tokens": pl.LazyFrame(schema={
            "chain_id": pl.Int64, "pair": pl.String, "base": pl.String,
            "base_is_token0": pl.Boolean, "base_decimals": pl.Int64}),
    }


def test_a_transfer_to_oneself_moves_nothing() -> None:
    f = movement_frames()
    moved = movement_events(f["transfers"], f["liquidity_events"], f["pair_tokens"],
                            f["tokens"]).collect()
    assert sorted(moved.select("wallet", "side", "qty").rows()) == [
        (V, "transfer_in", 2.0), (W, "transfer_out", 2.0)]


def test_a_transfers_sending_end_comes_before_its_receiving_end() -> None:
    # A swap of pool P (base T) by V in block 9, log 0, then the transfer W -> V at log 1.
    legs = pl.LazyFrame({
        "chain_id": [1], "block_number": [9], "log_index": [0], "ts": [int(AT.timestamp())],
        "pair": ["P"], "side": ["buy"],
        "base_amount": [1.0], "price_usd": [3.0], "volume_usd": [3.0], "fee_usd": [0.1],
        "gas_used": [100]})
    lake = pl.LazyFrame({"chain_id": [1], "block_number": [9], "log_index": [0],
                         "maker": [V]})
    frames = {**movement_frames(), "swap_legs": legs, "swaps": lake,
              "pair_tokens": pl.LazyFrame({"chain_id": [1], "pair": ["P"], "base": [T],
                                           "base_is_token0": [True], "base_decimals": [6]})}
    rows = wallet_events(frames, AT).select("log_index", "seq", "wallet", "side")
    assert rows.rows() == [(0, 0, V, "buy"), (1, 1, W, "transfer_out"),
                           (1, 2, V, "transfer_in")]


@pytest.mark.parametrize("far_block", [7, 2 ** 40], ids=["packed key", "four columns"])
def test_chain_order_is_chain_then_block_then_log_then_seq(far_block) -> None:
    # Chains 56 and 1 in two runs, as a chain's day of swaps and the movements come. A block past
    # 40 bits no longer fits the packed key: the columns are sorted instead, to the same order.
    events = pl.DataFrame({
        "chain_id": [56, 56, 1, 1, 1, 1, 56],
        "block_number": [far_block, 3, 5, 5, 5, 4, 3],
        "log_index": [0, 9, 2, 2, 1, 7, 9],
        "seq": pl.Series([0, 0, 2, 1, 0, 0, 1], dtype=pl.UInt8)})
    # By hand: chain 1 first (block 4; then block 5's log 1, then log 2's seq 1 before seq 2),
    # then chain 56 (block 3 log 9 seq 0, then seq 1, then the far block).
    assert chain_order(events).to_list() == [5, 4, 3, 2, 1, 6, 0]


def test_a_funding_cluster_is_a_funders_first_funded_wallets_from_two_to_fifty() -> None:
    # F first funds A and B (B is later funded by G too); S, an exchange labelled twice, funds C
    # and D; M funds 51 wallets; O funds only E; F's one wallet on chain 2 is no cluster.
    rows = [(1, "A", "F", 10), (1, "B", "F", 20), (1, "B", "G", 5_000), (1, "C", "S", 30),
            (1, "D", "S", 40), (1, "E", "O", 50), (2, "H", "F", 60)]
    rows += [(1, f"m{i}", "M", 100 + i) for i in range(51)]
    funding = pl.DataFrame(rows, schema=["chain_id", "wallet", "funder", "ts"], orient="row")
    labels = pl.DataFrame({"chain_id": [1, 1], "address": ["S", "S"], "kind": [1, 2]})
    got = dict(funding_clusters(funding, labels).select("wallet", "cluster_id").iter_rows())
    f_on_1 = int.from_bytes(hashlib.sha256(b"1:F").digest()[:6], "big")
    assert len(got) == 6 + 51
    assert got["A"] == got["B"] == f_on_1 > 0
    assert got["C"] == got["D"] == got["E"] == got["H"] == got["m0"] == 0
    assert {got[f"m{i}"] for i in range(51)} == {0}


def test_a_side_the_ledger_does_not_know_is_refused_not_accounted() -> None:
    with pytest.raises(pl.exceptions.InvalidOperationError, match="mint"):
        account(events([(W, T, "buy", 1.0, 1.0, 1.0), (W, T, "mint", 1.0, None, 1.0)]))


def test_funding_ties_in_time_come_in_chain_order_with_their_price_at_the_time() -> None:
    # Four native transfers, three in one second on two chains given out of order, and one
    # before the feed's first price. Expected order and USD values worked by hand.
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    at = [t0 + timedelta(seconds=s) for s in (100, 100, 100, 50)]
    transfers = pl.DataFrame({
        "chain_id": [2, 1, 1, 1], "block_number": [7, 9, 8, 1], "log_index": [0, 1, 4, 0],
        "tx_hash": ["c", "b", "a", "d"], "token": ["N2", "N1", "N1", "N1"],
        "from_address": ["f"] * 4, "to_address": ["w2", "w1b", "w1a", "w0"],
        "amount": [3 * 10**18, 2 * 10**18, 10**18, 10**18], "block_time": at})
    frames = {
        "transfers": transfers.lazy(),
        "chains": pl.LazyFrame({"chain_id": [1, 2], "native_token": ["N1", "N2"]}),
        "tokens": pl.LazyFrame({"chain_id": [1, 2], "address": ["N1", "N2"],
                                "decimals": [18, 18], "price_feed_id": ["p1", "p2"]}),
        "quote_prices": pl.LazyFrame({"feed_id": ["p1", "p2"],
                                      "ts": [int(t0.timestamp()) + 60] * 2,
                                      "price_usd": [10.0, 5.0]}),
    }
    funded = assemble_funding(frames, t0 + timedelta(days=1))
    assert funded.select("chain_id", "block_number", "wallet", "amount_usd").rows() == [
        (1, 1, "w0", None), (1, 8, "w1a", 10.0), (1, 9, "w1b", 20.0), (2, 7, "w2", 15.0)]


def test_ahead_gives_every_item_in_order() -> None:
    assert list(ahead(iter(range(5)))) == [0, 1, 2, 3, 4]
    assert list(ahead(iter([]))) == []


def test_ahead_makes_the_next_item_while_the_one_before_is_used() -> None:
    making_second = threading.Event()

    def items():
        yield "first"
        making_second.set()
        yield "second"

    given = ahead(items())
    assert next(given) == "first"
    # Made sequentially, the second would be started only when asked for: this would time out.
    assert making_second.wait(timeout=10)
    assert list(given) == ["second"]


def test_ahead_raises_an_error_where_its_item_would_have_come() -> None:
    def items():
        yield 1
        raise OSError("the lake went away")

    given = ahead(items())
    assert next(given) == 1
    with pytest.raises(OSError, match="the lake went away"):
        next(given)


def test_ahead_makes_at_most_one_more_for_a_reader_that_stops() -> None:
    made = []

    def items():
        for n in range(10):
            made.append(n)
            yield n

    given = ahead(items())
    assert next(given) == 0
    given.close()
    assert made in ([0], [0, 1])
