"""A list's order is kept per snapshot as row numbers of its table, and what is kept is bounded
by its bytes however many snapshots come."""

import polars as pl

from core.caches import ByteCache
from edge import paging
from edge.paging import ROW, Listing, gather_rows, numbered, ordering
from edge.snapshots import table
from publish.reader import Manifest, Part, Snapshot


def snapshot(sid: str, rows: pl.DataFrame) -> Snapshot:
    at = "2026-11-20T00:00:00.000Z"
    return Snapshot(Manifest(sid, at, at), {}, {"t": [Part(f"objects/{sid}", rows)]})


ROWS = pl.DataFrame({"item": [f"row {i}" for i in range(6)], "v": [3, 9, 1, 9, 0, 5]})
# Largest first, ties by row: rows 1, 3, 5, 0, 2, 4.
BY_V = Listing("t", lambda s: numbered(table(s, "t")).sort("v", ROW, descending=[True, False])
               .select(ROW), gather=gather_rows("t"))


def test_an_order_is_kept_as_row_numbers_and_a_page_gathers_its_rows() -> None:
    first = snapshot("a", ROWS)
    kept = ordering(first, BY_V)
    assert kept.columns == [ROW] and kept[ROW].to_list() == [1, 3, 5, 0, 2, 4]
    assert ordering(first, BY_V) is kept
    assert gather_rows("t")(first, kept.slice(2, 3))["item"].to_list() == [
        "row 5", "row 0", "row 2"]


def test_what_the_orders_keep_stays_under_its_bound_as_snapshots_come(monkeypatch) -> None:
    monkeypatch.setattr(paging, "_orderings", ByteCache(1_000))
    whole = Listing("t", lambda s: table(s, "t"))
    rows = pl.DataFrame({"item": ["x" * 40] * 10})
    assert rows.estimated_size() > 300
    for n in range(50):
        assert ordering(snapshot(f"s{n}", rows), whole).height == 10
        assert paging._orderings.bytes <= 1_000
    assert 0 < len(paging._orderings) < 4
