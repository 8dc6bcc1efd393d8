"""A swap's tax measures from its transaction's transfers, worked out by hand."""

from datetime import UTC, datetime

from sources.evm.families import SwapEvent
from sources.evm.taxes import Leg, Measure, measures, runs

POOL, TOKEN, WETH, ALICE, ROUTER, KEEPER = "pool", "tkn", "weth", "alice", "router", "keeper"


def swap(tx: str, log_index: int, event: SwapEvent, block: int = 7):
    return ({"address": POOL, "logIndex": hex(log_index), "transactionHash": tx}, event, block)


def test_a_buy_and_a_sell_measure_what_did_not_arrive():
    legs = {
        # A buy of 1,000 TKN: the pool pays 50 to the token's keeper, 950 to Alice.
        "0xb": [Leg(0, WETH, ROUTER, POOL, 10), Leg(1, TOKEN, POOL, KEEPER, 50),
                Leg(2, TOKEN, POOL, ALICE, 950)],
        # A sell of 400 TKN: 100 to the keeper, 300 reach the pool.
        "0xs": [Leg(0, TOKEN, ALICE, KEEPER, 100), Leg(1, TOKEN, ALICE, POOL, 300),
                Leg(2, WETH, POOL, ALICE, 3)],
    }
    found = measures(
        [swap("0xb", 3, SwapEvent(ROUTER, ALICE, 0, 10, 1_000, 0)),
         swap("0xs", 3, SwapEvent(ROUTER, ALICE, 300, 0, 0, 3))],
        legs, {POOL: (TOKEN, WETH)}, {WETH}, {POOL})
    assert found == [Measure(TOKEN, "buy", 0.05, 7, 3), Measure(TOKEN, "sell", 0.25, 7, 3)]


def test_what_the_transfers_do_not_account_for_is_not_measured():
    legs = {
        # Two senders paid the pool: whose tax is it?
        "0x2": [Leg(0, TOKEN, ALICE, POOL, 100), Leg(1, TOKEN, KEEPER, POOL, 100)],
        # The token itself sells its own fees into the pool.
        "0xt": [Leg(0, TOKEN, TOKEN, POOL, 500)],
        # What the pool got is not what the swap says came in.
        "0xm": [Leg(0, TOKEN, ALICE, POOL, 90)],
    }
    found = measures(
        [swap("0x2", 2, SwapEvent(ROUTER, ALICE, 200, 0, 0, 1)),
         swap("0xt", 1, SwapEvent(ROUTER, TOKEN, 500, 0, 0, 1)),
         swap("0xm", 1, SwapEvent(ROUTER, ALICE, 100, 0, 0, 1))],
        legs, {POOL: (TOKEN, WETH)}, {WETH}, {POOL})
    assert found == []


def test_two_swaps_of_one_pool_in_a_transaction_each_take_their_own_legs():
    legs = {"0xd": [Leg(0, TOKEN, ALICE, POOL, 100), Leg(2, TOKEN, ALICE, KEEPER, 10),
                    Leg(3, TOKEN, ALICE, POOL, 90)]}
    found = measures(
        [swap("0xd", 1, SwapEvent(ROUTER, ALICE, 100, 0, 0, 1)),
         swap("0xd", 4, SwapEvent(ROUTER, ALICE, 90, 0, 0, 1))],
        legs, {POOL: (TOKEN, WETH)}, {WETH}, {POOL})
    assert found == [Measure(TOKEN, "sell", 0.0, 7, 1), Measure(TOKEN, "sell", 0.1, 7, 4)]


def test_runs_of_one_tax_are_one_row():
    times = {n: datetime(2026, 12, 1, 0, n, tzinfo=UTC) for n in range(10)}
    found = [Measure(TOKEN, "buy", 0.05, 1, 0), Measure(TOKEN, "buy", 0.0500004, 2, 5),
             Measure(TOKEN, "buy", 0.1, 4, 1), Measure(TOKEN, "sell", 0.0, 3, 2)]
    assert runs(found, times, 1) == [
        {"chain_id": 1, "token": TOKEN, "side": "buy", "tax": 0.05, "swaps": 2,
         "block_number": 1, "log_index": 0, "block_time": times[1], "last_block": 2,
         "last_time": times[2]},
        {"chain_id": 1, "token": TOKEN, "side": "buy", "tax": 0.1, "swaps": 1,
         "block_number": 4, "log_index": 1, "block_time": times[4], "last_block": 4,
         "last_time": times[4]},
        {"chain_id": 1, "token": TOKEN, "side": "sell", "tax": 0.0, "swaps": 1,
         "block_number": 3, "log_index": 2, "block_time": times[3], "last_block": 3,
         "last_time": times[3]}]
