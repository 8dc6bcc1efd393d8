from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable

from core.columns import RAW
from sources.lake import COMPACT_ABOVE_FILES, LakeError, LakeMaintenance, LakeWriter


def swaps(n: int = 3, amount: int = 5, first_block: int = 10) -> pl.DataFrame:
    t = [datetime(2026, 11, 18, 23, 59, tzinfo=UTC), datetime(2026, 11, 19, 0, 1, tzinfo=UTC),
         datetime(2026, 11, 19, 0, 2, tzinfo=UTC)][:n]
    return pl.DataFrame({
        "chain_id": [1] * n, "block_number": list(range(first_block, first_block + n)),
        "log_index": [0] * n,
        "block_time": pl.Series(t, dtype=pl.Datetime("us", "UTC")),
        "tx_hash": ["0xa", "0xb", "0xc"][:n], "pair": ["0xp"] * n, "maker": ["0xm"] * n,
        "sender": ["0xr"] * n, "recipient": ["0xm"] * n,
        "amount0_in": pl.Series([Decimal(amount)] * n, dtype=RAW),
        "amount1_in": pl.Series([Decimal(0)] * n, dtype=RAW),
        "amount0_out": pl.Series([Decimal(0)] * n, dtype=RAW),
        "amount1_out": pl.Series([Decimal(7)] * n, dtype=RAW),
        "gas_used": [100_000] * n, "tx_fee_raw": pl.Series([None] * n, dtype=RAW),
    })


def crowded(root) -> LakeWriter:
    """A lake whose one swaps partition holds more files than compaction leaves alone."""
    lake = LakeWriter(root)
    lake.write("swaps", swaps(1))
    for step in range(1, COMPACT_ABOVE_FILES + 2):
        lake.append("swaps", later(swaps(1), step, step))
    return lake


def later(frame: pl.DataFrame, blocks: int, seconds: int) -> pl.DataFrame:
    return frame.with_columns(block_number=pl.col("block_number") + blocks,
                              block_time=pl.col("block_time") + timedelta(seconds=seconds))


def test_swaps_are_a_delta_table_partitioned_by_chain_and_date(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    assert DeltaTable(str(tmp_path / "swaps")).metadata().partition_columns == ["chain_id", "date"]
    rel = [f.removeprefix(str(tmp_path) + "/").rsplit("/", 1)[0] for f in lake.files("swaps")]
    assert rel == ["swaps/chain_id=1/date=2026-11-18", "swaps/chain_id=1/date=2026-11-19"]
    assert lake.read("swaps").equals(swaps())


def test_a_day_keeps_its_place_in_the_table_however_later_days_grow(tmp_path):
    lake = LakeWriter(tmp_path)
    # Chain 1: one swap on the 18th, two on the 19th; chain 2: three on the 18th.
    two = swaps(first_block=50).with_columns(chain_id=pl.lit(2, pl.Int64),
                                            block_time=pl.col("block_time") - timedelta(hours=1))
    lake.write("swaps", pl.concat([swaps(), two]))
    assert lake.days("swaps") == ["2026-11-18", "2026-11-19"]
    # Dates first: every chain's 18th before any chain's 19th, a chain's rows in block order.
    order = lake.read("swaps").select("chain_id", "block_number").rows()
    assert order == [(1, 10), (2, 50), (2, 51), (2, 52), (1, 11), (1, 12)]
    assert lake.scan("swaps", "2026-11-19").select("block_number").collect()[
        "block_number"].to_list() == [11, 12]
    version = lake.version("swaps")
    assert lake.changed_days("swaps", version) == []
    lake.append("swaps", later(swaps(), 10, 3 * 3600))
    assert lake.changed_days("swaps", version) == ["2026-11-19"]
    assert lake.changed_days("swaps", None) == ["2026-11-18", "2026-11-19"]
    assert lake.scan("swaps", "2026-11-19").select(pl.len()).collect().item() == 5


def test_writing_the_same_range_twice_leaves_the_same_rows(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    lake.write("swaps", swaps())
    assert lake.read("swaps").equals(swaps())
    assert len(lake.files("swaps")) == 2


def test_replacing_a_block_range_across_days_is_one_commit(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())  # blocks 10 (the 18th), 11 and 12 (the 19th)
    before = lake.version("swaps")
    # Block 11 again with another amount, and block 12 gone: the range 11..12 in one commit.
    again = swaps(2, amount=9)[1:]
    assert lake.replace("swaps", again,
                        "chain_id = 1 AND block_number >= 11 AND block_number <= 12") == before + 1
    rows = lake.read("swaps").sort("block_number")
    assert rows["block_number"].to_list() == [10, 11]
    assert rows["amount0_in"].to_list() == [Decimal(5), Decimal(9)]
    # Nothing to add: the range's rows are removed alone.
    lake.replace("swaps", swaps().clear(), "chain_id = 1 AND block_number >= 11")
    assert lake.read("swaps")["block_number"].to_list() == [10]


def test_a_range_replaced_keeps_every_partition_in_key_order(tmp_path):
    lake = LakeWriter(tmp_path)
    # Ten blocks on the 19th (blocks 20..29, a second apart), appended in two batches.
    day = pl.concat([later(swaps(1), b, 120 + b) for b in range(10, 20)])
    lake.append("swaps", day.head(6))
    lake.append("swaps", day.tail(4))
    # A reorg from block 27: blocks 27..29 replaced by blocks 27 and 28 with another amount.
    fork = day.filter(pl.col("block_number").is_between(27, 28)).with_columns(
        amount0_in=pl.lit(Decimal(9)).cast(RAW))
    lake.replace("swaps", fork, "chain_id = 1 AND block_number >= 27")
    rows = lake.read("swaps")
    assert rows["block_number"].to_list() == list(range(20, 29))
    assert rows["amount0_in"].to_list() == [Decimal(5)] * 7 + [Decimal(9)] * 2
    # A range read again below where the lake stands changes nothing, order included.
    lake.replace("swaps", rows.filter(pl.col("block_number") <= 24),
                 "chain_id = 1 AND block_number >= 20 AND block_number <= 24")
    assert lake.read("swaps").equals(rows)


def test_rewriting_a_partition_replaces_its_rows_and_no_other(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    lake.write("swaps", swaps(amount=9).slice(1, 2))
    amounts = lake.read("swaps")["amount0_in"].to_list()
    assert amounts == [Decimal(5), Decimal(9), Decimal(9)]


@pytest.mark.parametrize("breakage", ["negative", "both_sides", "missing_column", "float_amount"])
def test_a_frame_breaking_the_contract_is_refused_and_nothing_is_written(tmp_path, breakage):
    frame = swaps()
    if breakage == "negative":
        frame = frame.with_columns(amount0_in=pl.Series([Decimal(-1)] * 3, dtype=RAW))
    elif breakage == "both_sides":
        frame = frame.with_columns(amount0_out=pl.Series([Decimal(1)] * 3, dtype=RAW))
    elif breakage == "missing_column":
        frame = frame.drop("maker")
    else:
        frame = frame.with_columns(pl.col("amount0_in").cast(pl.Float64))
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps(1))
    with pytest.raises(LakeError):
        lake.append("swaps", later(frame, 100, 60))
    assert lake.read("swaps").equals(swaps(1))
    assert lake.version("swaps") == 0


def test_an_absent_table_scans_empty_with_its_schema(tmp_path):
    frame = LakeWriter(tmp_path).read("heads")
    assert frame.height == 0 and "indexed_block" in frame.columns


def test_appends_read_in_block_order_and_a_restore_undoes_them(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    assert lake.append("swaps", later(swaps(), 3, 120)) == 1
    lake.append("swaps", later(swaps(), 6, 180))
    assert lake.read("swaps")["block_number"].to_list() == list(range(10, 19))
    lake.restore("swaps", 1)
    assert lake.read("swaps")["block_number"].to_list() == list(range(10, 16))
    lake.restore("swaps", None)
    assert lake.version("swaps") is None


def test_a_pinned_lake_reads_the_versions_of_its_last_complete_batch(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    lake.write("heads", pl.DataFrame(schema=LakeWriter(tmp_path).read("heads").schema))
    lake.mark(datetime(2026, 11, 19, 0, 3, tzinfo=UTC), "test")
    # A batch half written: swaps committed, its mark not yet.
    lake.append("swaps", later(swaps(), 3, 120))
    pinned = lake.pinned()
    assert pinned.read("swaps").height == 3
    assert LakeWriter(tmp_path).read("swaps").height == 6
    progress = lake.progress()
    assert progress is not None and progress.versions["swaps"] == 0
    assert progress.watermark == datetime(2026, 11, 19, 0, 3, tzinfo=UTC)


def test_compaction_keeps_rows_and_their_order_and_vacuum_keeps_retained_versions(tmp_path):
    lake = crowded(tmp_path)
    before = lake.read("swaps")
    assert len(lake.files("swaps")) == COMPACT_ABOVE_FILES + 2
    version = lake.version("swaps")
    assert LakeMaintenance(lake).compact("swaps") == 1
    assert len(lake.files("swaps")) == 1
    assert lake.read("swaps").equals(before)
    # Within the retention window every version is still readable...
    assert LakeMaintenance(lake).vacuum("swaps") == []
    assert LakeWriter(tmp_path, {"swaps": version}).read("swaps").equals(before)
    # ...and past it the files only old versions read are gone, the current ones stay.
    assert len(LakeMaintenance(lake).vacuum("swaps", timedelta(0))) == COMPACT_ABOVE_FILES + 2
    assert LakeWriter(tmp_path).read("swaps").equals(before)


def test_the_lake_works_the_same_on_s3(s3_env):
    import boto3

    boto3.client("s3").create_bucket(Bucket="lake")
    lake = LakeWriter("s3://lake/raw")
    lake.write("swaps", swaps())
    lake.mark(datetime(2026, 11, 19, 0, 3, tzinfo=UTC), "test")
    lake.append("swaps", later(swaps(), 3, 120))
    assert lake.pinned().read("swaps").equals(swaps())
    assert lake.read("swaps")["block_number"].to_list() == list(range(10, 16))
    for step in range(COMPACT_ABOVE_FILES):
        lake.append("swaps", later(swaps(1), 10 + step, 3600 + step))
    whole = lake.read("swaps")
    assert LakeMaintenance(lake).compact("swaps") == 1
    assert lake.read("swaps").equals(whole)
    LakeMaintenance(lake).vacuum("swaps", timedelta(0))
    assert LakeWriter("s3://lake/raw").read("swaps").equals(whole)
    progress = lake.progress()
    assert progress is not None and progress.versions == {"swaps": 0}


def test_an_append_racing_a_compaction_is_never_lost(tmp_path, monkeypatch):
    import sources.lake.maintenance as module

    lake, raced = crowded(tmp_path), []
    real = module.write_deltalake

    def racing(target, data, **options):
        # A live writer's append lands after the compaction read its partition.
        if options.get("mode") == "overwrite" and not raced:
            raced.append(True)
            LakeWriter(tmp_path).append("swaps", later(swaps(1), 100, 200))
        return real(target, data, **options)

    monkeypatch.setattr(module, "write_deltalake", racing)
    assert LakeMaintenance(lake).compact("swaps") == 1
    blocks = LakeWriter(tmp_path).read("swaps")["block_number"].to_list()
    assert blocks == [*range(10, 10 + COMPACT_ABOVE_FILES + 2), 110]


@pytest.mark.parametrize("keep_open", [False, True])
def test_a_compaction_racing_an_append_is_tried_again_by_the_append(tmp_path, monkeypatch,
                                                                    keep_open):
    import sources.lake.writer as module

    crowded(tmp_path)
    lake, refused = LakeWriter(tmp_path, keep_open=keep_open), []
    real = module.write_deltalake

    def racing(target, data, **options):
        # The compaction commits after the append read the table: Delta refuses the append.
        if options.get("mode") == "append" and not refused:
            # A lake keeping its tables open writes through the one it holds, as it was.
            started = target if isinstance(target, DeltaTable) else DeltaTable(str(target))
            assert LakeMaintenance(LakeWriter(tmp_path)).compact("swaps") == 1
            try:
                return real(started, data, **options)
            except module.CommitFailedError:
                refused.append(True)
                raise
        return real(target, data, **options)

    monkeypatch.setattr(module, "write_deltalake", racing)
    lake.append("swaps", later(swaps(1), 100, 200))
    assert refused
    blocks = LakeWriter(tmp_path).read("swaps")["block_number"].to_list()
    assert blocks == [*range(10, 10 + COMPACT_ABOVE_FILES + 2), 110]


def test_a_table_dropped_and_written_again_is_read_again(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    assert lake.read("swaps")["amount0_in"].to_list() == [Decimal(5)] * 3
    # Version 0 again, other rows: what was kept of the first table must not be served.
    lake.drop("swaps")
    lake.write("swaps", swaps(amount=9))
    assert lake.version("swaps") == 0
    assert lake.read("swaps")["amount0_in"].to_list() == [Decimal(9)] * 3


def test_a_lake_kept_open_reads_the_commits_made_since_it_opened_each_table(tmp_path):
    crowded(tmp_path)
    writer = LakeWriter(tmp_path, keep_open=True)
    first = writer.append("swaps", later(swaps(1), 100, 200))
    # Another process compacts the table between two of the writer's batches.
    assert LakeMaintenance(LakeWriter(tmp_path)).compact("swaps") == 1
    assert writer.append("swaps", later(swaps(1), 101, 201)) == first + 2
    fresh = LakeWriter(tmp_path)
    assert writer.version("swaps") == fresh.version("swaps") == first + 2
    mark = writer.mark(datetime(2026, 11, 19, 0, 5, tzinfo=UTC), "test")
    assert mark.versions == fresh.current_versions()
    blocks = [*range(10, 10 + COMPACT_ABOVE_FILES + 2), 110, 111]
    assert writer.read("swaps")["block_number"].to_list() == blocks
    assert fresh.read("swaps")["block_number"].to_list() == blocks
    # What the writer drops and writes again is the new table, from version 0.
    writer.drop("swaps")
    writer.write("swaps", swaps(amount=9))
    assert writer.version("swaps") == 0
    assert writer.read("swaps")["amount0_in"].to_list() == [Decimal(9)] * 3


def test_a_lake_kept_open_sees_a_table_dropped_and_written_again_elsewhere(tmp_path):
    follower, other = LakeWriter(tmp_path, keep_open=True), LakeWriter(tmp_path)
    other.write("swaps", swaps())
    assert follower.read("swaps").height == 3
    other.drop("swaps")
    assert follower.version("swaps") is None
    # Version 0 again, then 1: not the held table's next commit.
    other.write("swaps", swaps(amount=9))
    other.append("swaps", later(swaps(amount=9), 3, 120))
    assert follower.version("swaps") == 1
    assert follower.read("swaps")["amount0_in"].to_list() == [Decimal(9)] * 6
    assert follower.pinned().read("swaps")["amount0_in"].to_list() == [Decimal(9)] * 6


def test_a_lake_kept_open_opens_each_table_once_across_appends_and_marks(tmp_path, monkeypatch):
    import core.delta as delta
    import sources.lake.reader as reader

    LakeWriter(tmp_path).write("swaps", swaps())
    opened: list[str] = []

    class Counted(DeltaTable):
        def __init__(self, uri, *args, **options):
            super().__init__(uri, *args, **options)
            opened.append(uri)  # a table that is there (a mark looks for every table)

    monkeypatch.setattr(delta, "DeltaTable", Counted)
    writer = LakeWriter(tmp_path, keep_open=True)
    for step in range(1, 4):
        writer.append("swaps", later(swaps(), 3 * step, 60 * step))
        writer.mark(datetime(2026, 11, 19, 0, step, tzinfo=UTC), "test")
    assert opened == [writer.uri("swaps")]
    assert writer.pinned().read("swaps").height == 12
    assert opened == [writer.uri("swaps")]
    # A follower's pinned reads, one a mark, open the table once too.
    follower = LakeWriter(tmp_path, keep_open=True)
    assert [follower.pinned().read("swaps").height for _ in range(3)] == [12, 12, 12]
    assert opened == [writer.uri("swaps")] * 2
    # Moved on by REOPEN_AFTER_VERSIONS versions since it was opened, the held table is opened
    # afresh: held at version 3 since version 0, it is opened again at its next use (at 3);
    # versions 4 and 5 keep it, version 6 opens it again.
    monkeypatch.setattr(reader, "REOPEN_AFTER_VERSIONS", 3)
    for step in range(4, 6):
        writer.append("swaps", later(swaps(1), 3 * step, 60 * step))
    assert opened == [writer.uri("swaps")] * 3
    writer.append("swaps", later(swaps(1), 21, 420))
    assert opened == [writer.uri("swaps")] * 4
    assert writer.read("swaps").height == 15


def test_the_files_past_a_frontier_say_when_what_was_taken_is_written_again(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())  # blocks 10..12: two files, the 18th's and the 19th's
    lake.append("swaps", later(swaps(1), 5, 240))  # block 15
    past = lake.past_files("swaps", {1: 12})
    assert past["min_block"].to_list() == [15] and past["chain_id"].to_list() == [1]
    assert lake.past("swaps", {1: 12}).collect()["block_number"].to_list() == [15]
    # Past block 11: the 19th's file (blocks 11 and 12) and the appended one.
    assert sorted(lake.past_files("swaps", {1: 11})["min_block"].to_list()) == [11, 15]
    taken = set(lake.past_files("swaps", {1: 11})["path"])
    # A reorg from block 12: its file goes, and what is written in its place (block 11 kept,
    # block 12 anew) reaches back past block 11.
    lake.replace("swaps", later(swaps(1), 2, 60).with_columns(log_index=pl.lit(3, pl.Int64)),
                 "chain_id = 1 AND block_number >= 12")
    now = lake.past_files("swaps", {1: 11})
    assert not taken <= set(now["path"])
    assert now.filter(~pl.col("path").is_in(list(taken)))["min_block"].min() == 11


def test_a_column_the_contract_gained_reads_as_its_value_before_and_is_kept_after(tmp_path):
    """A lake whose oracle updates were written before they said their source: those rows read
    as the simulator's, and rows added or rewritten since keep their own."""
    from deltalake import write_deltalake

    def update(second: int, source: str | None) -> dict:
        row = {"feed_id": "a" * 64, "publish_time": second, "price": 5, "conf": 0, "expo": -8,
               "ema_price": 5, "ema_conf": 0, "slot": second, "prev_publish_time": second}
        return row if source is None else {**row, "source": source}

    lake = LakeWriter(tmp_path / "lake")
    day = "2026-11-25"  # of 1,795,564,800 s: the partition the lake files it under
    before = pl.DataFrame([update(1_795_564_800, None)]).with_columns(date=pl.lit(day))
    write_deltalake(str(tmp_path / "lake" / "oracle_updates"), before.to_arrow(),
                    partition_by=["date"])
    assert lake.read("oracle_updates")["source"].to_list() == ["simulator"]
    lake.append("oracle_updates", pl.DataFrame([update(1_795_564_801, "chainlink")]))
    lake.replace("oracle_updates", pl.DataFrame([update(1_795_564_802, "peg")]),
                 "publish_time = 1795564802")
    read = LakeWriter(tmp_path / "lake").read("oracle_updates").sort("publish_time")
    assert read["source"].to_list() == ["simulator", "chainlink", "peg"]
    assert "source" in DeltaTable(str(tmp_path / "lake" / "oracle_updates")).schema().to_arrow() \
        .names


def test_a_table_read_at_each_new_version_holds_its_newest_only(tmp_path):
    """A live reader of a table committed every second holds the newest version it read, not
    every past one: the read cache's entries for the table stay one however many commits."""
    from sources.lake import reader

    lake = LakeWriter(tmp_path, keep_open=True)
    lake.write("swaps", swaps(1))
    root = lake.uri("swaps")
    for step in range(1, 6):
        lake.append("swaps", later(swaps(1), step, step))
        assert lake.read("swaps").height == step + 1
        held = [key for key in reader._HELD._held if key[0] == root]
        assert [key[2] for key in held] == [lake.version("swaps")]
    # An older version read again is read, and held beside the newest.
    assert LakeWriter(tmp_path, versions={"swaps": 2}).read("swaps").height == 3


def test_a_table_keeps_a_log_of_hours_and_the_maintenance_sets_it_on_an_older_table(tmp_path):
    wanted = {"delta.logRetentionDuration": "interval 6 hours",
              "delta.deletedFileRetentionDuration": "interval 2 hours"}
    lake = LakeWriter(tmp_path / "lake")
    lake.append("swaps", swaps())
    assert DeltaTable(lake.uri("swaps")).metadata().configuration == wanted
    # A table made before the lake set them (here with Delta's defaults, 30 and 7 days) gets
    # them from the maintenance's vacuum, its rows untouched.
    DeltaTable(lake.uri("swaps")).alter.set_table_properties(
        {"delta.logRetentionDuration": "interval 30 days",
         "delta.deletedFileRetentionDuration": "interval 7 days"})
    LakeMaintenance(lake).vacuum("swaps")
    assert DeltaTable(lake.uri("swaps")).metadata().configuration == wanted
    assert lake.read("swaps").height == 3


def test_the_earliest_new_row_of_a_day_since_a_version(tmp_path):
    """Each chain's rows past its last at a version are new, whenever they happened: a chain
    that trails the others writes rows older than theirs; a compaction moves nothing, a reorg
    makes every row of the day new."""
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())  # chain 1: blocks 10-12, up to the 19th 00:02
    day = ("2026-11-19",)
    since = lake.version("swaps")
    assert lake.earliest_new("swaps", since, day) is None
    # Chain 1 on to 05:00; chain 2, new to the lake, from 03:00; chain 1's old rows stay old.
    at = datetime(2026, 11, 19, tzinfo=UTC)
    lake.append("swaps", later(swaps(1), 20, 5 * 3600 + 60))
    lake.append("swaps", swaps(1).with_columns(chain_id=pl.lit(2, pl.Int64),
                                               block_time=pl.lit(at + timedelta(hours=3))))
    assert lake.earliest_new("swaps", since, day) == at + timedelta(hours=3)
    # Of another day's dates: nothing new there.
    assert lake.earliest_new("swaps", since, ("2026-11-18",)) is None
    # Without a version: the earliest of every row of the day.
    assert lake.earliest_new("swaps", None, day) == at + timedelta(minutes=1)
    # A compaction rewrites the rows and adds none.
    for step in range(1, COMPACT_ABOVE_FILES + 2):
        lake.append("swaps", later(swaps(1), 30 + step, 6 * 3600 + step))
    since = lake.version("swaps")
    assert LakeMaintenance(lake).compact("swaps") == 1
    assert lake.version("swaps") > since
    assert lake.earliest_new("swaps", since, day) is None
    # A reorg from block 31 (06:01): every row of the day is taken as new.
    lake.replace("swaps", later(swaps(1), 31, 6 * 3600 + 2), "chain_id = 1 AND block_number >= 31")
    assert lake.earliest_new("swaps", since, day) == at + timedelta(minutes=1)


def test_appended_rows_are_found_new_from_the_logs_statistics_without_reading_rows(tmp_path):
    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    since = lake.version("swaps")
    before = set(lake.files("swaps"))
    # Blocks 30-32, two hours on: 01:59, 02:01 and 02:02 of the 19th (the first on the 19th
    # after 23:59 on the 18th plus two hours).
    lake.append("swaps", later(swaps(), 20, 2 * 3600))
    # The files the version held can no longer be read: only the log's statistics can tell.
    for path in before:
        Path(path).write_bytes(b"not parquet")
    assert lake.earliest_new("swaps", since, ("2026-11-19",)) == datetime(
        2026, 11, 19, 1, 59, tzinfo=UTC)


def test_the_earliest_new_oracle_update_is_read_as_an_instant(tmp_path):
    def update(second: int) -> dict:
        return {"feed_id": "a" * 64, "publish_time": second, "price": 5, "conf": 0,
                "expo": -8, "ema_price": 5, "ema_conf": 0, "slot": second,
                "prev_publish_time": second, "source": "chainlink"}

    lake = LakeWriter(tmp_path)
    noon = 1_795_564_800 + 12 * 3600  # the 25th of November 2026, 12:00
    lake.append("oracle_updates", pl.DataFrame([update(noon)]))
    since = lake.version("oracle_updates")
    lake.append("oracle_updates", pl.DataFrame([update(noon + 90)]))
    assert lake.earliest_new("oracle_updates", since, ("2026-11-25",)) == datetime(
        2026, 11, 25, 12, 1, 30, tzinfo=UTC)


def test_a_version_further_back_than_the_lookback_makes_every_row_new(tmp_path, monkeypatch):
    import sources.lake.reader

    lake = LakeWriter(tmp_path)
    lake.write("swaps", swaps())
    since = lake.version("swaps")
    lake.append("swaps", later(swaps(1), 20, 3600))
    lake.append("swaps", later(swaps(1), 21, 7200))
    day = ("2026-11-19",)
    # The two appends: 23:59 on the 18th plus one and two hours.
    assert lake.earliest_new("swaps", since, day) == datetime(2026, 11, 19, 0, 59, tzinfo=UTC)
    # Two commits back is past a lookback of one: every row of the day, the first at 00:01.
    monkeypatch.setattr(sources.lake.reader, "LOOKBACK", 1)
    assert lake.earliest_new("swaps", since, day) == datetime(2026, 11, 19, 0, 1, tzinfo=UTC)
