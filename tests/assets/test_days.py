"""Which hour of a day a refresh makes its products again from."""

import json
from datetime import UTC, datetime, timedelta

import polars as pl

from assets.days import KEPT_DAYS, Segment, from_hour, making, segments
from assets.warehouse import Warehouse
from sources.lake import LakeWriter
from tests.sources.test_lake import later, swaps

DAY = "2026-11-19"
AT = datetime(2026, 11, 19, tzinfo=UTC)


def records(warehouse: Warehouse, *names: str) -> dict:
    """Each product's record of its making, as a run reads them."""
    return {name: warehouse.made_record(name) for name in names}


def kept(version: int, through: datetime, day: str = DAY) -> dict:
    """A product's record of its making of `day`, from the lake's swaps at `version`."""
    return {"days": {day: {"lake": {"swaps": version}, "through": through.isoformat()}}}


def test_a_day_is_made_again_from_the_hour_of_its_earliest_new_row(tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    lake.write("swaps", swaps())  # chain 1, up to 00:02 on the 19th
    version = lake.version("swaps")
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    for name in ("a", "b"):
        warehouse.write(name, pl.DataFrame({"x": [0]}), day=DAY)
        warehouse.write(name, pl.DataFrame({"x": [1]}), day=DAY, hour=5,
                        made=kept(version, AT + timedelta(hours=5.5)))
    # Nothing new: the hour the last making's watermark was in (05:30).
    assert from_hour(warehouse, records(warehouse, "a", "b"), DAY, ("swaps",)) == 5
    # Chain 1 goes on at 06:00: still from 05:00.
    lake.append("swaps", later(swaps(1), 20, 6 * 3600))
    assert from_hour(warehouse, records(warehouse, "a", "b"), DAY, ("swaps",)) == 5
    # A chain that trails writes a row of 04:10: from the file it falls in, which begins at 0.
    lake.append("swaps", swaps(1).with_columns(
        chain_id=pl.lit(2, pl.Int64), block_time=pl.lit(AT + timedelta(hours=4, minutes=10))))
    assert from_hour(warehouse, records(warehouse, "a", "b"), DAY, ("swaps",)) == 0


def test_a_closed_day_with_nothing_new_is_made_again_from_its_last_file(tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    lake.write("swaps", swaps())
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    warehouse.write("a", pl.DataFrame({"x": [0]}), day=DAY)
    warehouse.write("a", pl.DataFrame({"x": [1]}), day=DAY, hour=22,
                    made=kept(lake.version("swaps"), AT + timedelta(days=1, minutes=5)))
    assert from_hour(warehouse, records(warehouse, "a"), DAY, ("swaps",)) == 22


def test_a_day_is_made_whole_when_its_making_was_not_kept(tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    lake.write("swaps", swaps())
    version = lake.version("swaps")
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    warehouse.write("a", pl.DataFrame({"x": [0]}), day=DAY)
    warehouse.write("a", pl.DataFrame({"x": [1]}), day=DAY, hour=5,
                    made=kept(version, AT + timedelta(hours=6)))
    warehouse.write("b", pl.DataFrame({"x": [1]}), day=DAY, hour=5,
                    made=kept(version, AT, "2026-11-18"))
    assert from_hour(warehouse, records(warehouse, "a"), DAY, ("swaps",)) == 5
    # One of the products kept its making of the 18th only.
    assert from_hour(warehouse, records(warehouse, "a", "b"), DAY, ("swaps",)) == 0
    # A making that wrote its first segment and not its last keeps no record.
    warehouse.write("a", pl.DataFrame({"x": [2]}), day=DAY, hour=6)
    assert from_hour(warehouse, records(warehouse, "a"), DAY, ("swaps",)) == 0


def test_a_making_keeps_the_days_before_it_kept(tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    lake.write("swaps", swaps())
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    versions = {"swaps": lake.version("swaps")}
    warehouse.write("as_of", pl.DataFrame({"as_of": [AT + timedelta(hours=2)],
                                           "lake_versions": [json.dumps(versions)]}))
    days = [f"2026-11-{d}" for d in range(14, 20)]
    for day in days:
        warehouse.write("a", pl.DataFrame({"x": [0]}), day=day,
                        made=making(warehouse, warehouse.made_record("a"), day))
    record = warehouse.made_record("a") or {}
    assert sorted(record["days"]) == days[-KEPT_DAYS:]
    assert record["days"][DAY] == {"lake": versions, "through": "2026-11-19T02:00:00+00:00"}


def test_a_segment_takes_its_hours_and_the_first_what_came_before_the_day():
    rows = pl.LazyFrame({"block_time": [AT - timedelta(hours=2), AT, AT + timedelta(hours=3),
                                        AT + timedelta(hours=5, minutes=59),
                                        AT + timedelta(hours=6)]})
    hours = [t.hour for t in Segment(DAY, 0, 6).rows(rows).collect()["block_time"]]
    assert hours == [22, 0, 3, 5]
    assert Segment(DAY, 3, 6).rows(rows).collect().height == 2
    assert Segment(DAY, 6).rows(rows).collect()["block_time"].to_list() == [
        AT + timedelta(hours=6)]


def test_a_run_cuts_closed_days_at_their_last_hour_and_the_watermarks_at_its_hour(tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    lake.write("swaps", swaps())
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    warehouse.write("as_of", pl.DataFrame({
        "as_of": [AT + timedelta(hours=5, minutes=30)],
        "lake_versions": [json.dumps({"swaps": lake.version("swaps")})]}))
    run = list(segments(warehouse, ["a"], ["2026-11-18", DAY], ("swaps",)))
    assert run == [(Segment("2026-11-18", 0, 23), False), (Segment("2026-11-18", 23), True),
                   (Segment(DAY, 0, 5), False), (Segment(DAY, 5), True)]
