"""The holder changes of the days before the last are summed once and kept: a refresh of the
last day adds its changes to the kept sums, and a change to an earlier day sums them again."""

from datetime import datetime
from decimal import Decimal

import polars as pl

from assets.market.holder_sums import NAME, holder_changes
from assets.market.holders import summed
from assets.warehouse import Warehouse
from core.columns import RAW
from tests.assets.swaps_lake import swaps_lake

DAYS = ("2026-11-17", "2026-11-18", "2026-11-19")


def changes(rows: list[tuple[str, str, int, bool]]) -> pl.DataFrame:
    """A day's holder changes on chain 1: (token, holder, raw change, minted)."""
    return pl.DataFrame({"chain_id": [1] * len(rows), "token": [r[0] for r in rows],
                         "holder": [r[1] for r in rows],
                         "change": pl.Series([Decimal(r[2]) for r in rows], dtype=RAW),
                         "minted": [r[3] for r in rows]})


def totals(warehouse: Warehouse) -> dict[tuple[str, str], tuple[int, bool]]:
    return {(token, holder): (int(change), minted) for token, holder, change, minted in
            summed(holder_changes(warehouse)).collect()
            .select("token", "holder", "change", "minted").iter_rows()}


def test_the_days_before_the_last_are_summed_once(tmp_path) -> None:
    lake = swaps_lake(tmp_path / "lake", [datetime.fromisoformat(f"{d}T12:00:00+00:00")
                                          for d in DAYS])
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    assert lake.days("swaps") == list(DAYS)
    day_rows = {DAYS[0]: [("T", "0xdeployer", -1000, True), ("T", "0xa", 1000, False)],
                DAYS[1]: [("T", "0xa", -400, False), ("T", "0xb", 400, False)],
                DAYS[2]: [("T", "0xb", -100, False), ("T", "0xc", 100, False)]}
    for day, rows in day_rows.items():
        warehouse.write("holder_changes", changes(rows), day)
    # By hand: A 1000 - 400, B 400 - 100, C 100; the deployer sent the supply out.
    want = {("T", "0xdeployer"): (-1000, True), ("T", "0xa"): (600, False),
            ("T", "0xb"): (300, False), ("T", "0xc"): (100, False)}
    assert totals(warehouse) == want
    kept = warehouse.version(NAME)
    # The last day made again: the kept sums are read, not made again.
    warehouse.write("holder_changes", changes([("T", "0xb", -300, False),
                                               ("T", "0xc", 300, False)]), DAYS[2])
    assert totals(warehouse) == {**want, ("T", "0xb"): (100, False), ("T", "0xc"): (300, False)}
    assert warehouse.version(NAME) == kept
    # An earlier day made again: the sums are made again, with it.
    warehouse.write("holder_changes", changes([("T", "0xa", -1000, False),
                                               ("T", "0xb", 1000, False)]), DAYS[1])
    assert totals(warehouse) == {("T", "0xdeployer"): (-1000, True), ("T", "0xa"): (0, False),
                                 ("T", "0xb"): (700, False), ("T", "0xc"): (300, False)}
    assert warehouse.version(NAME) == kept + 1
