"""The pair trades' event key rule: one trade per log of a block of a chain."""

import polars as pl
import pytest

from checks.outcome import validate
from checks.schemas.market import SwapLeg


def legs(keys: list[tuple[int, int, int]]) -> pl.DataFrame:
    n = len(keys)
    chain, block, log = (list(part) for part in zip(*keys, strict=True))
    return pl.DataFrame({
        "chain_id": chain, "pair": ["P"] * n, "block_number": block, "log_index": log,
        "ts": [1] * n, "maker_key": pl.Series([9] * n, dtype=pl.UInt64), "base_amount": [1.0] * n,
        "quote_amount": [2.0] * n, "fee_usd": [0.1] * n,
        "side": ["buy"] * n, "gas_used": [21_000] * n})


@pytest.mark.parametrize("keys", [
    [(1, 7, 0), (1, 7, 1), (2, 7, 0)],
    # Would share one packed integer if a log index of 2^20 were packed: told apart by rows.
    [(1, 0, 2**20), (1, 1, 0)],
    # Not in chain order: counted rather than proved by order.
    [(1, 7, 1), (1, 7, 0), (2, 3, 0)],
    [(1, 7, 0), (2, 7, 0), (1, 8, 0)],
], ids=["distinct", "beyond_the_packed_bits", "log_out_of_order", "chain_in_two_runs"])
def test_distinct_events_pass(keys) -> None:
    assert validate("swap_legs", SwapLeg, legs(keys)).passed


@pytest.mark.parametrize("keys", [
    [(1, 7, 0), (1, 7, 1), (1, 7, 0)],
    [(1, 2**50, 0), (5, 1, 1), (1, 2**50, 0)],
    # Each chain's run rises, but chain 1 comes back with an event it had.
    [(1, 7, 0), (2, 7, 0), (1, 7, 0)],
], ids=["packed", "beyond_the_packed_bits", "chain_in_two_runs"])
def test_a_repeated_event_fails_on_both_of_its_rows(keys) -> None:
    outcome = validate("swap_legs", SwapLeg, legs(keys))
    assert not outcome.passed
    assert outcome.failures["check"].to_list() == ["one_trade_per_event"] * 2
    assert outcome.failures["index"].to_list() == [0, 2]
