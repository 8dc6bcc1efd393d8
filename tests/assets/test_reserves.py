"""A day partition takes the rows of the dates since the day of swaps before it, so a date no swap
was made on counts in the next day of swaps; the pair state's reserves at any instant are the
last before it, read from the days' summaries and the rows of the instant's own dates."""

from datetime import UTC, datetime
from decimal import Decimal

import polars as pl

from assets.market.reserves import day_closes, reserve_day, reserves_at
from assets.warehouse import Warehouse
from core.columns import RAW
from sources.lake import LakeWriter
from tests.assets.swaps_lake import swaps_lake


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


# Pool A: funded the day before the first day of swaps, then a reserve on each date, the 19th
# being a date without a swap. Pool B: created on the 19th.
RESERVES = [("0xa", at(17, 12), 1, 0, 10), ("0xa", at(18, 6), 2, 0, 11),
            ("0xa", at(19, 9), 3, 0, 12), ("0xb", at(19, 10), 4, 0, 5),
            ("0xb", at(20, 1), 5, 0, 6), ("0xa", at(20, 3), 6, 0, 13),
            ("0xa", at(21, 5), 7, 0, 14)]
SWAP_TIMES = [at(18, 6), at(20, 3)]


def _lake(root) -> LakeWriter:
    lake = swaps_lake(root, SWAP_TIMES, [2, 6])
    rows = sorted(RESERVES, key=lambda r: (r[2], r[3]))
    lake.write("reserves", pl.DataFrame({
        "chain_id": [1] * len(rows), "block_number": [r[2] for r in rows],
        "log_index": [r[3] for r in rows],
        "block_time": pl.Series([r[1] for r in rows], dtype=pl.Datetime("us", "UTC")),
        "tx_hash": [f"0x{r[2]}{r[3]}" for r in rows], "pair": [r[0] for r in rows],
        "reserve0": pl.Series([Decimal(r[4]) for r in rows], dtype=RAW),
        "reserve1": pl.Series([Decimal(10 * r[4]) for r in rows], dtype=RAW)}))
    return lake


def test_a_date_without_swaps_counts_in_the_next_day_of_swaps(tmp_path) -> None:
    lake = _lake(tmp_path / "lake")
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    assert lake.days("swaps") == ["2026-11-18", "2026-11-20"]

    def reserve0(day: str) -> list[int]:
        return [int(v) for v in warehouse.scan_day("reserves", day).collect()["reserve0"]]

    # The first day takes every earlier date; the second the 19th and its own date; the 21st,
    # which no swap has reached, is in no day yet.
    assert reserve0("2026-11-18") == [10, 11]
    assert reserve0("2026-11-20") == [12, 5, 6, 13]
    assert warehouse.scan_day("swaps", "2026-11-20").collect()["block_number"].to_list() == [6]


def test_reserves_at_any_instant_are_the_last_before_it(tmp_path) -> None:
    lake = _lake(tmp_path / "lake")
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    for day in lake.days("swaps"):
        warehouse.write("reserve_days", reserve_day(warehouse.scan_day("reserves", day), day),
                        day)
    cutoffs = {"before": at(17, 18), "first_day": at(18, 12), "gap": at(19, 9, 30),
               "gap_late": at(19, 23), "second": at(20, 2), "after": at(21, 12)}
    got = {row["pair"]: row for row in reserves_at(warehouse, cutoffs).collect().iter_rows(
        named=True)}
    # By hand, from RESERVES: pool A's last reserve0 at or before each instant, and pool B's.
    want = {"0xa": {"before": 10, "first_day": 11, "gap": 12, "gap_late": 12, "second": 12,
                    "after": 14, "first": 10},
            "0xb": {"before": None, "first_day": None, "gap": None, "gap_late": 5,
                    "second": 6, "after": 6, "first": 5}}
    for pair, values in want.items():
        seen = {name: None if got[pair][f"reserve0_{name}"] is None
                else int(got[pair][f"reserve0_{name}"]) for name in values}
        assert seen == values, pair
        assert got[pair]["reserve1_second"] == 10 * got[pair]["reserve0_second"]


def test_day_closes_are_each_dates_last_reserves(tmp_path) -> None:
    """Each date's close, whether a day of swaps (from its summary), a date no swap was made on,
    a date before the first day of swaps, or the date of the instant (up to it)."""
    lake = _lake(tmp_path / "lake")
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    for day in lake.days("swaps"):
        warehouse.write("reserve_days", reserve_day(warehouse.scan_day("reserves", day), day),
                        day)

    def closes(until: datetime) -> dict[tuple[str, int], int]:
        frame = day_closes(warehouse, until)
        return {(pair, day.day): int(r0) for pair, day, r0 in
                frame.select("pair", "day", "reserve0").iter_rows()}

    # By hand, from RESERVES: one reserve per pool and date, so each is its date's close.
    assert closes(at(21, 12)) == {("0xa", 17): 10, ("0xa", 18): 11, ("0xa", 19): 12,
                                  ("0xb", 19): 5, ("0xb", 20): 6, ("0xa", 20): 13,
                                  ("0xa", 21): 14}
    # Cut inside the 20th: pool B's reserve at 01:00 is in, pool A's at 03:00 is not.
    assert closes(at(20, 2)) == {("0xa", 17): 10, ("0xa", 18): 11, ("0xa", 19): 12,
                                 ("0xb", 19): 5, ("0xb", 20): 6}
    # Cut on the first day of swaps, before its reserve: only the date before it.
    assert closes(at(18, 5)) == {("0xa", 17): 10}
