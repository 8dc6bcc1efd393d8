"""The stored ledger as the publish reads it: a lake day at a time (a closed one a chain at a
time), the closed days named by their files and read only for the spans asked for, the days
still changing read once. By hand."""

import polars as pl
import pytest

from assets.snapshot.wallet_tables import StoredLedger

DAY, HOUR = 86_400, 3_600
# The cut: 02:30 on day 3.
CUT = 3 * DAY + 2 * HOUR + 1800


def rows(*ts: int) -> pl.DataFrame:
    return pl.DataFrame({"chain_id": 1, "ts": list(ts), "qty": [float(t) for t in ts]})


class Files:
    """Lake days' files at hand, and which files were read."""

    def __init__(self, files: dict[str, pl.DataFrame]) -> None:
        self.files, self.read = files, []

    def __call__(self, names: list[str]) -> pl.LazyFrame:
        self.read.append(sorted(names))
        return pl.concat([self.files[n] for n in names]).lazy()


# Day 1 had no swaps: its movement is in lake day 2's file, beside day 2's rows.
FILES = {"d0": rows(10, 20), "d2": rows(DAY + 5, 2 * DAY + 7), "d3": rows(3 * DAY + 9, CUT - 5)}
DAYS = {0: ["d0"], 2 * DAY: ["d2"], 3 * DAY: ["d3"]}


def test_a_lake_day_holds_the_days_without_swaps_before_it_and_each_span_is_read_alone():
    files = Files(FILES)
    ledger = StoredLedger(DAYS, files, CUT)
    assert ledger.closed == {0: 0, DAY: 2 * DAY, 2 * DAY: 2 * DAY}
    hour = 3 * DAY + 2 * HOUR
    assert set(ledger.names(("ts", "qty"))) == {0, DAY, 2 * DAY, 3 * DAY, hour}
    files.read.clear()
    [day_1] = ledger.rows({DAY}, ("ts",))
    assert day_1["ts"].to_list() == [DAY + 5]
    # Its chains listed, then its rows read.
    assert files.read == [["d2"], ["d2"]]
    # Every span: a lake day at a time, the days still changing last; each row once.
    assert [f["ts"].to_list() for f in ledger.rows(None, ("ts",))] == [
        [10, 20], [DAY + 5, 2 * DAY + 7], [3 * DAY + 9, CUT - 5]]
    # The watermark's hour is not closed: asked for, the recent rows come whole.
    assert [f["ts"].to_list() for f in ledger.rows({hour}, ("ts",))] == [[3 * DAY + 9, CUT - 5]]


def test_a_closed_span_is_named_by_its_files_and_a_recent_one_by_its_rows():
    before = StoredLedger(DAYS, Files(FILES), CUT).names(("ts", "qty"))
    # The same rows in a new file of day 0 (as a write makes one): day 0's name changes only.
    moved = StoredLedger({**DAYS, 0: ["d0-again"]}, Files({**FILES, "d0-again": FILES["d0"]}),
                       CUT).names(("ts", "qty"))
    assert {s for s in before if before[s] != moved[s]} == {0}
    # A changed row in the watermark's day, in a new file: only its span changes name.
    changed = {**FILES, "d3-again": rows(3 * DAY + 9, CUT - 4)}
    after = StoredLedger({**DAYS, 3 * DAY: ["d3-again"]}, Files(changed), CUT).names(("ts", "qty"))
    assert {s for s in before if before[s] != after[s]} == {3 * DAY + 2 * HOUR}


def test_no_span_asked_for_reads_no_rows_and_gives_the_columns():
    files = Files(FILES)
    ledger = StoredLedger(DAYS, files, CUT)
    [empty] = ledger.rows(set(), ("ts", "qty"))
    assert empty.is_empty() and empty.columns == ["ts", "qty"]


def test_a_ledger_without_days_is_refused():
    with pytest.raises(ValueError, match="no days"):
        StoredLedger({}, Files({}), CUT)


def test_a_closed_days_rows_come_a_chain_at_a_time_in_chain_order():
    # Lake day 2 holds chain 7's rows, then chain 1's; the recent day both chains'.
    two = pl.concat([rows(DAY + 5, 2 * DAY + 7).with_columns(chain_id=pl.lit(7)),
                     rows(2 * DAY + 9)])
    ledger = StoredLedger({0: ["d0"], 2 * DAY: ["d2"], 3 * DAY: ["d3"]},
                          Files({**FILES, "d2": two}), CUT)
    got = [(f["chain_id"].unique().to_list(), f["ts"].to_list())
           for f in ledger.rows(None, ("chain_id", "ts"))]
    assert got == [([1], [10, 20]), ([1], [2 * DAY + 9]), ([7], [DAY + 5, 2 * DAY + 7]),
                   ([1], [3 * DAY + 9, CUT - 5])]
    # Only day 1's span: of day 2's rows, chain 7's one in it.
    assert [f["ts"].to_list() for f in ledger.rows({DAY}, ("chain_id", "ts"))] == [
        [], [DAY + 5]]
