"""The wire's text forms, written once for the batch and the edge alike."""

from datetime import UTC, datetime

import polars as pl

from core.wire import iso, iso_text, pair_status


def test_an_instant_reads_the_same_from_the_batch_and_the_edge():
    at = datetime(2026, 11, 29, 1, 2, 3, 456_789, tzinfo=UTC)
    assert iso_text(at) == "2026-11-29T01:02:03.456Z"
    assert pl.select(iso(pl.lit(at))).item() == iso_text(at)
    assert iso_text(1_764_378_123) == "2025-11-29T01:02:03.000Z"


def test_a_pairs_status_follows_spec_order():
    rows = pl.DataFrame({"unresolved": [True, False, False, False],
                         "rugged": [True, True, False, False], "txns": [5, 5, 1, 0]})
    got = rows.select(pair_status(pl.col("unresolved"), pl.col("rugged"), pl.col("txns")))
    assert got.to_series().to_list() == ["unresolved", "rugged", "active", "inactive"]
