"""A token's taxes from the lake's measures and its tokens row, worked out by hand."""

from datetime import UTC, datetime

import polars as pl

from figures.taxes import token_taxes


def at(block: int) -> datetime:
    return datetime(2026, 12, 1, block // 60, block % 60, tzinfo=UTC)


def test_the_last_run_of_agreeing_measures_is_the_tax_served():
    tokens = pl.LazyFrame({"chain_id": [1, 1, 1], "address": ["A", "B", "C"],
                           "buy_tax": [None, 0.05, None], "sell_tax": [None, 0.1, None]},
                          schema_overrides={"buy_tax": pl.Float64, "sell_tax": pl.Float64})
    rows = [  # token, side, tax, swaps, first block, log index
        ("A", "buy", 0.05, 3, 10, 1), ("A", "buy", 0.050003, 2, 20, 4),  # one tax (< half a bp)
        ("A", "sell", 0.05, 4, 11, 2), ("A", "sell", 0.2, 1, 30, 0),  # raised at block 30
        ("A", "sell", 0.2, 2, 40, 7),
        ("C", "buy", 0.0, 5, 12, 3)]
    measured = pl.LazyFrame({
        "chain_id": [1] * len(rows), "token": [r[0] for r in rows], "side": [r[1] for r in rows],
        "tax": [r[2] for r in rows], "swaps": [r[3] for r in rows],
        "block_number": [r[4] for r in rows], "log_index": [r[5] for r in rows],
        "block_time": [at(r[4]) for r in rows]})
    got = {r["address"]: r for r in token_taxes(tokens, measured).collect().to_dicts()}
    assert got["A"] == {"chain_id": 1, "address": "A",
                        "buy_tax": 0.050003, "buy_tax_swaps": 5, "buy_tax_since": at(10),
                        "sell_tax": 0.2, "sell_tax_swaps": 3, "sell_tax_since": at(30)}
    # Nothing measured: what its row declares, with no evidence.
    assert got["B"] == {"chain_id": 1, "address": "B",
                        "buy_tax": 0.05, "buy_tax_swaps": None, "buy_tax_since": None,
                        "sell_tax": 0.1, "sell_tax_swaps": None, "sell_tax_since": None}
    # Measured untaxed on buys; its sells not measured yet.
    assert got["C"] == {"chain_id": 1, "address": "C",
                        "buy_tax": 0.0, "buy_tax_swaps": 5, "buy_tax_since": at(12),
                        "sell_tax": None, "sell_tax_swaps": None, "sell_tax_since": None}
