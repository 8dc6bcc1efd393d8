"""Round trips as a wallet's trait, worked by hand: only the pool's very next swap counts, and
a swap in another pool in between does not break one."""

from datetime import UTC, datetime

import polars as pl

from assets.wallets.behaviour import swap_traits


def test_a_round_trip_is_a_buy_sold_back_in_the_pools_next_swap() -> None:
    # In ledger order: (pool, wallet, side).
    rows = [("P1", "w1", "buy"), ("P2", "w2", "buy"), ("P1", "w1", "sell"),   # trip: w1
            ("P1", "w1", "buy"), ("P1", "w2", "buy"), ("P1", "w1", "sell"),   # w2 between
            ("P2", "w2", "sell"), ("P2", "w2", "buy"), ("P1", "w2", "sell")]  # trip: w2
    pair, wallet, side = zip(*rows, strict=True)
    ledger = pl.DataFrame({"chain_id": [1] * len(rows), "wallet": wallet, "token": "T",
                           "pair": pair, "side": side, "ts": range(1_000, 1_000 + len(rows))})
    pools = pl.DataFrame({"chain_id": [1, 1], "pair": ["P1", "P2"],
                          "created_at": [datetime(1970, 1, 1, tzinfo=UTC)] * 2})
    traits = {r["wallet"]: r for r in swap_traits(ledger, pools).iter_rows(named=True)}
    assert (traits["w1"]["round_trips"], traits["w1"]["buys"], traits["w1"]["sells"]) == (1, 2, 2)
    # w2: its P2 buy is followed by its P2 sell (a trip); its P1 buy by w1's sell (none).
    assert (traits["w2"]["round_trips"], traits["w2"]["buys"]) == (1, 3)
