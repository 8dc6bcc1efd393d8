"""A wallet's traits worked by hand: round trips (only the pool's very next swap counts, and a
swap in another pool in between does not break one), entries and snipes, hours, first seen and
last active, and peak capital; and the traits' rules."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from assets.wallets.behaviour import wallet_traits
from checks.outcome import validate
from checks.schemas.wallets import WalletTraits


def test_a_round_trip_is_a_buy_sold_back_in_the_pools_next_swap() -> None:
    # In ledger order: (pool, wallet, side).
    rows = [("P1", "w1", "buy"), ("P2", "w2", "buy"), ("P1", "w1", "sell"),   # trip: w1
            ("P1", "w1", "buy"), ("P1", "w2", "buy"), ("P1", "w1", "sell"),   # w2 between
            ("P2", "w2", "sell"), ("P2", "w2", "buy"), ("P1", "w2", "sell")]  # trip: w2
    pair, wallet, side = zip(*rows, strict=True)
    ledger = pl.DataFrame({"chain_id": [1] * len(rows), "wallet": wallet, "token": "T",
                           "pair": pair, "side": side, "ts": range(1_000, 1_000 + len(rows)),
                           "cost_change": 0.0})
    pools = pl.DataFrame({"chain_id": [1, 1], "pair": ["P1", "P2"],
                          "created_at": [datetime(1970, 1, 1, tzinfo=UTC)] * 2})
    traits = {r["wallet"]: r for r in wallet_traits(ledger, pools).iter_rows(named=True)}
    assert (traits["w1"]["round_trips"], traits["w1"]["buys"], traits["w1"]["sells"]) == (1, 2, 2)
    # w2: its P2 buy is followed by its P2 sell (a trip); its P1 buy by w1's sell (none).
    assert (traits["w2"]["round_trips"], traits["w2"]["buys"]) == (1, 3)


def test_entries_snipes_pools_hours_and_established_swaps_by_hand() -> None:
    # P1 opens at E (a launch for its first week), P2 a month before, P3 is no known pool.
    # w3 buys P1 ten times in its first seconds: one entry, sniped (P1's swaps 0..9, young).
    # w2 buys P1 as its 11th swap (entered, not sniped) and sells into P2 at hour 2.
    # w1 buys P2 at hour 3 (established), buys P3 and sells it back next (a round trip; P3's
    # age is unknown: neither established nor a launch), and buys P1 eight days on, when P1
    # is established and past its first ten swaps.
    e = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())
    rows = [("P1", "w3", "buy", e + 10 + k) for k in range(10)]
    rows += [("P1", "w2", "buy", e + 20), ("P2", "w2", "sell", e + 7_205),
             ("P2", "w1", "buy", e + 10_800), ("P3", "w1", "buy", e + 10_801),
             ("P3", "w1", "sell", e + 97_202), ("P1", "w1", "buy", e + 691_200)]
    pair, wallet, side, ts = zip(*rows, strict=True)
    ledger = pl.DataFrame({"chain_id": [1] * len(rows), "wallet": wallet, "token": "T",
                           "pair": pair, "side": side, "ts": ts, "cost_change": 0.0})
    launch = datetime.fromtimestamp(e, UTC)
    pools = pl.DataFrame({"chain_id": [1, 1], "pair": ["P1", "P2"],
                          "created_at": [launch, launch - timedelta(days=30)]})
    got = {r["wallet"]: r for r in wallet_traits(ledger, pools).iter_rows(named=True)}
    figures = ("swaps", "buys", "sells", "round_trips", "established", "pools", "hours",
               "first_swap", "last_swap", "entries", "sniped")
    assert [got["w3"][f] for f in figures] == [10, 10, 0, 0, 0, 1, 1, e + 10, e + 19, 1, 1]
    assert [got["w2"][f] for f in figures] == [2, 1, 1, 0, 1, 2, 2, e + 20, e + 7_205, 1, 0]
    assert [got["w1"][f] for f in figures] == [4, 3, 1, 1, 2, 3, 2, e + 10_800, e + 691_200,
                                               3, 0]
    # Wallets come in the order of their first swaps, each with its address.
    assert list(got) == ["w3", "w2", "w1"]


def test_movements_count_in_first_seen_last_active_and_peak_capital_only() -> None:
    # w1 receives tokens (cost +50), buys (+100: 150 open, its peak), sells half (-75: 75
    # left), buys again (+60: 135, below the peak), then sends everything away (-135: 0).
    # w2 only ever receives: seen, with no swaps.
    rows = [("w1", None, "transfer_in", 100, 50.0), ("w2", None, "transfer_in", 150, 0.0),
            ("w1", "P1", "buy", 200, 100.0), ("w1", "P1", "sell", 300, -75.0),
            ("w1", "P1", "buy", 400, 60.0), ("w1", None, "transfer_out", 500, -135.0)]
    wallet, pair, side, ts, change = zip(*rows, strict=True)
    ledger = pl.DataFrame({"chain_id": [1] * len(rows), "wallet": wallet, "token": "T",
                           "pair": pair, "side": side, "ts": ts, "cost_change": change})
    pools = pl.DataFrame({"chain_id": [1], "pair": ["P1"],
                          "created_at": [datetime(1970, 1, 1, tzinfo=UTC)]})
    got = {r["wallet"]: r for r in wallet_traits(ledger, pools).iter_rows(named=True)}
    assert list(got) == ["w1", "w2"]
    w1, w2 = got["w1"], got["w2"]
    assert (w1["first_seen"], w1["last_active"], w1["first_swap"], w1["last_swap"]) == (
        100, 500, 200, 400)
    assert (w1["swaps"], w1["buys"], w1["sells"], w1["pools"], w1["entries"]) == (3, 2, 1, 1, 1)
    assert w1["deployed_usd"] == 150.0
    assert (w2["first_seen"], w2["last_active"], w2["swaps"], w2["first_swap"]) == (
        150, 150, 0, None)
    assert w2["deployed_usd"] == 0.0


def traits_row(**overrides) -> pl.DataFrame:
    # 3 buys and a sell in 3 pools, 2 of them established, over 2 hours of day; the sell
    # closed a round trip; 3 entries, none sniped.
    base = {"chain_id": 1, "wallet": "w1", "swaps": 4, "buys": 3, "sells": 1,
            "round_trips": 1, "established": 2, "pools": 3, "hours": 2, "first_swap": 10,
            "last_swap": 20, "entries": 3, "sniped": 0, "first_seen": 5, "last_active": 30,
            "deployed_usd": 10.0}
    return pl.DataFrame([{**base, **overrides}])


@pytest.mark.parametrize("broken", [
    {"sells": 2}, {"round_trips": 2, "sells": 1}, {"entries": 4}, {"pools": 5, "entries": 3},
    {"sniped": 4}, {"established": 5}, {"hours": 25}, {"first_swap": 4}, {"last_swap": 31},
    {"swaps": 0, "buys": 0, "sells": 0, "round_trips": 0, "pools": 0, "entries": 0,
     "established": 0}, {"deployed_usd": -1.0}])
def test_each_traits_rule_fails_when_broken(broken) -> None:
    assert validate("wallet_traits", WalletTraits, traits_row()).passed
    assert not validate("wallet_traits", WalletTraits, traits_row(**broken)).passed


def test_a_wallet_has_one_traits_row() -> None:
    assert not validate("wallet_traits", WalletTraits,
                        pl.concat([traits_row(), traits_row()])).passed
