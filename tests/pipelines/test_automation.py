import os
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import dagster as dg
import polars as pl

from assets.tables import BY_DAY
from assets.warehouse import Warehouse
from core.columns import RAW
from pipelines.schedules import lake_maintenance, lake_sensor, rankings
from sources.lake import COMPACT_ABOVE_FILES, LakeWriter
from tests.sources.test_lake import later, swaps


def requested(result) -> dg.RunRequest:
    assert isinstance(result, dg.SensorResult), result
    assert len(result.run_requests) == 1
    return result.run_requests[0]


def days_of(request: dg.RunRequest) -> tuple[str, str]:
    """The first and last day partition a run request asks for."""
    return (request.tags["dagster/asset_partition_range_start"],
            request.tags["dagster/asset_partition_range_end"])


def two_days(tmp_path, monkeypatch) -> tuple[LakeWriter, datetime]:
    """A lake of the test swaps (the 18th and the 19th), marked complete at 00:03 on the 19th,
    and the warehouse beside it, both where the sensor looks."""
    monkeypatch.setenv("CHAINTAPE_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("CHAINTAPE_WAREHOUSE", str(tmp_path / "warehouse"))
    lake = LakeWriter()
    lake.write("swaps", swaps())
    mark = datetime(2026, 11, 19, 0, 3, tzinfo=UTC)
    lake.mark(mark, "test")
    return lake, mark


def observed(result) -> dict[str, int]:
    return {event.asset_key.path[-1]: event.metadata["delta_version"].value
            for event in result.asset_events}


def test_the_sensor_asks_for_one_refresh_per_new_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAINTAPE_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("CHAINTAPE_WAREHOUSE", str(tmp_path / "warehouse"))
    sensor = lake_sensor("everything")
    lake = LakeWriter()
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance)
        assert isinstance(sensor(context), dg.SkipReason)
        lake.write("swaps", swaps())
        lake.write("heads", lake.read("heads"))
        first = datetime(2026, 11, 19, 0, 3, tzinfo=UTC)
        lake.mark(first, "test")
        result = sensor(context)
        assert requested(result).run_key == first.isoformat()
        # The first refresh makes every day the swaps have.
        assert days_of(requested(result)) == ("2026-11-18", "2026-11-19")
        assert instance.get_dynamic_partitions("days") == ["2026-11-18", "2026-11-19"]
        # Every table is observed at its version the first time.
        assert observed(result) == {"swaps": 0, "heads": 0}
        context = dg.build_sensor_context(instance=instance, cursor=context.cursor)
        assert isinstance(sensor(context), dg.SkipReason)
        lake.append("swaps", later(swaps(), 3, 120))
        lake.mark(first + timedelta(seconds=2), "test")
        context = dg.build_sensor_context(instance=instance, cursor=context.cursor)
        result = sensor(context)
        assert requested(result).run_key == (first + timedelta(seconds=2)).isoformat()
        # The appended swaps are all of the 19th: that day alone is made again.
        assert days_of(requested(result)) == ("2026-11-19", "2026-11-19")
        # Then only the tables whose version moved.
        assert observed(result) == {"swaps": 1}


def test_a_change_to_a_day_read_table_alone_makes_the_day_of_swaps_that_takes_it(
        tmp_path, monkeypatch):
    lake, mark = two_days(tmp_path, monkeypatch)
    sensor = lake_sensor("everything")
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance)
        requested(sensor(context))
        # A reserve written late for the 18th, with no swap: that day is made again, and the
        # days after it, as for a swap.
        lake.append("reserves", pl.DataFrame({
            "chain_id": [1], "block_number": [9], "log_index": [1],
            "block_time": pl.Series([datetime(2026, 11, 18, 23, 58, tzinfo=UTC)],
                                    dtype=pl.Datetime("us", "UTC")),
            "tx_hash": ["0x9"], "pair": ["0xp"],
            "reserve0": pl.Series([Decimal(5)], dtype=RAW),
            "reserve1": pl.Series([Decimal(7)], dtype=RAW)}))
        lake.mark(mark + timedelta(seconds=2), "test")
        context = dg.build_sensor_context(instance=instance, cursor=context.cursor)
        result = sensor(context)
        assert days_of(requested(result)) == ("2026-11-18", "2026-11-19")
        assert observed(result) == {"reserves": 0}


def test_the_days_a_day_product_lacks_beside_the_others_are_made_again(tmp_path, monkeypatch):
    """A product made a day at a time that this warehouse does not hold for some day the others
    hold (one new to it): the next refresh makes that day again, with the changed ones."""
    lake, mark = two_days(tmp_path, monkeypatch)
    warehouse = Warehouse(lake_root=str(tmp_path / "lake"), root=str(tmp_path / "warehouse"))
    sensor = lake_sensor("everything")
    made = pl.DataFrame({"n": [1]})
    for name in BY_DAY:
        for day in ("2026-11-18", "2026-11-19"):
            if (name, day) != ("pair_days", "2026-11-18"):
                warehouse.write(name, made, day)
    assert warehouse.unmade_days() == ["2026-11-18"]
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance)
        requested(sensor(context))
        # Swaps of the 19th only: the 18th, which the pair days lack, is made again too.
        lake.append("swaps", later(swaps(), 3, 120))
        lake.mark(mark + timedelta(seconds=2), "test")
        context = dg.build_sensor_context(instance=instance, cursor=context.cursor)
        assert days_of(requested(sensor(context))) == ("2026-11-18", "2026-11-19")
        # Once made, the changed day alone.
        warehouse.write("pair_days", made, "2026-11-18")
        lake.append("swaps", later(swaps(), 3, 180))
        lake.mark(mark + timedelta(seconds=4), "test")
        context = dg.build_sensor_context(instance=instance, cursor=context.cursor)
        assert days_of(requested(sensor(context))) == ("2026-11-19", "2026-11-19")


def test_the_sensor_shows_how_far_a_chain_follower_stands_behind_the_head(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("CHAINTAPE_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("CHAINTAPE_WAREHOUSE", str(tmp_path / "warehouse"))
    lake = LakeWriter()
    lake.write("swaps", swaps())
    # A follower that wrote blocks up to 109 while the chain's head was 130.
    lake.mark(datetime(2026, 11, 19, 0, 3, tzinfo=UTC), "evm",
              meta={"next_block": 110, "head_block": 130})
    with dg.instance_for_test() as instance:
        result = lake_sensor("everything")(dg.build_sensor_context(instance=instance))
        (event,) = result.asset_events
        assert event.metadata["head_block"].value == 130
        assert event.metadata["blocks_behind_head"].value == 21


def test_the_maintenance_job_compacts_crowded_partitions_and_keeps_every_row(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("CHAINTAPE_LAKE", str(tmp_path / "lake"))
    lake = LakeWriter()
    lake.write("swaps", swaps(1))
    for step in range(1, COMPACT_ABOVE_FILES + 2):
        lake.append("swaps", later(swaps(1), step, step))
    before = lake.read("swaps")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=lake.root)
    assert lake_maintenance.execute_in_process(resources={"warehouse": warehouse}).success
    assert len(lake.files("swaps")) == 1
    assert lake.read("swaps").equals(before)
    assert before.height == COMPACT_ABOVE_FILES + 2


def test_the_maintenance_job_keeps_recent_product_versions_and_removes_uncommitted_files(
        tmp_path, monkeypatch):
    monkeypatch.setenv("CHAINTAPE_LAKE", str(tmp_path / "lake"))
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(tmp_path / "lake"))
    for n in range(2):
        warehouse.write("p", pl.DataFrame({"n": [n]}))
    # A write killed between its file and its commit, two hours ago, and one still under way.
    stale, fresh = (warehouse.path("p") / f"part-{name}.parquet" for name in ("stale", "fresh"))
    for orphan in (stale, fresh):
        pl.DataFrame({"n": [9]}).write_parquet(orphan)
    hours_ago = time.time() - 2 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    assert lake_maintenance.execute_in_process(resources={"warehouse": warehouse}).success
    assert not stale.exists() and fresh.exists()
    # Both versions were made inside the retention window: both stay readable.
    assert [warehouse.scan("p", version=v).collect().item() for v in (0, 1)] == [0, 1]


def test_the_rankings_are_made_again_only_once_the_watermark_moved_past_theirs(
        tmp_path, monkeypatch):
    monkeypatch.setenv("CHAINTAPE_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("CHAINTAPE_WAREHOUSE", str(tmp_path / "warehouse"))
    warehouse = Warehouse(lake_root=str(tmp_path / "lake"), root=str(tmp_path / "warehouse"))
    _, schedule = rankings()
    first = datetime(2026, 11, 19, 0, 3, tzinfo=UTC)

    def tick() -> tuple[list[str], str | None]:
        with dg.instance_for_test() as instance:
            found = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
        return [r.run_key for r in found.run_requests or []], found.skip_message

    def ranked(columns: dict) -> None:
        warehouse.write("wallet_rankings", pl.DataFrame(
            {"chain_id": [1, 1], "wallet": ["0xa", "0xb"], **columns}))

    # Nothing made yet: the first refresh ranks.
    assert tick()[0] == []
    warehouse.write("as_of", pl.DataFrame({"as_of": [first]}))
    ranked({"as_of": [first, first]})
    # Ranked as of the watermark already: nothing to do.
    runs, said = tick()
    assert runs == [] and first.isoformat() in str(said)
    # The watermark moved on: one run, keyed by the new watermark (ranked once).
    later = first + timedelta(minutes=1)
    warehouse.write("as_of", pl.DataFrame({"as_of": [later]}))
    assert tick() == ([later.isoformat()], None)
    # Rankings stored before they said their watermark are made again.
    ranked({"user_score": [1, 2]})
    assert tick() == ([later.isoformat()], None)


def test_the_days_of_a_refresh_that_did_not_finish_are_made_again(tmp_path, monkeypatch):
    """The cursor moves on when a refresh is asked for: one that failed or was stopped would
    otherwise leave its days as they were until the next change on them."""
    lake, mark = two_days(tmp_path, monkeypatch)
    sensor = lake_sensor("everything")
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance)
        first = requested(sensor(context))
        assert days_of(first) == ("2026-11-18", "2026-11-19")
        for n, ended in enumerate([dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED,
                                   dg.DagsterRunStatus.SUCCESS], start=1):
            # The refresh asked for ends so; then swaps of the 19th alone land.
            instance.add_run(dg.DagsterRun(job_name="everything", run_id=f"run-{n}",
                                           status=ended, tags=first.tags))
            lake.append("swaps", later(swaps(), 3, 60 * n))
            lake.mark(mark + timedelta(seconds=2 * n), "test")
            context = dg.build_sensor_context(instance=instance, cursor=context.cursor)
            if ended == dg.DagsterRunStatus.SUCCESS:
                assert days_of(requested(sensor(context))) == ("2026-11-19", "2026-11-19")
            else:
                # Unfinished: its first day again, and every day after it.
                first = requested(sensor(context))
                assert days_of(first) == ("2026-11-18", "2026-11-19")
