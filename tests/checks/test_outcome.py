"""A product checked in pieces: one outcome, failing when any piece fails, counting every
piece's failures."""

import polars as pl

from checks.outcome import SAMPLE_ROWS, combined
from checks.products import piece_outcome

# Three ledger pieces (two chains' worth and a clean one); held must be >= 0.
PIECE = pl.DataFrame({"chain_id": [1, 1, 1], "wallet": ["0xa", "0xa", "0xb"],
                      "token": ["0xt", "0xt", "0xt"], "round": [0, 1, 0],
                      "opened_at": [10, 20, 30], "hold_seconds": [5, 5, 5],
                      "is_open": [False, False, True], "closed_at": [15, 25, None],
                      "held": [0.0, 0.0, 2.0], "open_cost_usd": [0.0, 0.0, 4.0]})


def test_pieces_that_pass_pass_together() -> None:
    outcome = combined("wallet_rounds", [piece_outcome("wallet_rounds", PIECE)] * 2)
    assert (outcome.passed, outcome.failure_count) == (True, 0)


def test_each_failing_piece_adds_its_failures() -> None:
    one = PIECE.with_columns(held=pl.Series([-1.0, 0.0, 2.0]))
    two = PIECE.with_columns(chain_id=pl.lit(2), held=pl.lit(-1.0))
    outcome = combined("wallet_rounds", [piece_outcome("wallet_rounds", p)
                                         for p in (one, PIECE, two)])
    # One negative holding in the first piece, three in the last.
    assert (outcome.passed, outcome.failure_count) == (False, 4)
    assert outcome.failures.height == 4 <= SAMPLE_ROWS
    assert set(outcome.failures["check"].cast(pl.String)) == {"greater_than_or_equal_to(0)"}
