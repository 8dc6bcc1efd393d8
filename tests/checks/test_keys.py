"""Uniqueness by fingerprint: distinct fingerprints prove distinct keys; rows whose
fingerprints meet are compared by their keys, so a shared fingerprint never fails a frame."""

import polars as pl

from core import columns
from core.columns import fingerprints_unique

ROWS = pl.DataFrame({"chain_id": [1, 1, 2, 1], "wallet": ["0xa", "0xb", "0xa", "0xa"],
                     "window": ["1d", "1d", "1d", "7d"]})


def test_distinct_keys_are_proved_by_their_fingerprints() -> None:
    assert fingerprints_unique(ROWS.lazy(), ("chain_id", "wallet", "window")) is True


def test_rows_sharing_a_key_are_the_ones_flagged() -> None:
    rows = pl.concat([ROWS, ROWS.slice(1, 1)])
    flagged = fingerprints_unique(rows.lazy(), ("chain_id", "wallet", "window"))
    # The second row and its copy (the last) share a key; the others pass.
    assert flagged.collect().to_series().to_list() == [True, False, True, True, False]


def test_fingerprints_that_meet_are_settled_by_the_keys(monkeypatch) -> None:
    # Every row given the same fingerprint: the keys, all distinct, decide.
    monkeypatch.setattr(columns, "keyed", lambda *keys: pl.col(keys[0]).cast(pl.UInt64) * 0)
    flagged = fingerprints_unique(ROWS.lazy(), ("chain_id", "wallet", "window"))
    assert flagged.collect().to_series().all()
