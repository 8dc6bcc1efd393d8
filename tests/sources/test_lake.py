import hashlib
import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import polars as pl
import pytest

from core.columns import RAW
from sources.lake import Lake, LakeError


def swaps(n: int = 3, amount: int = 5) -> pl.DataFrame:
    t = [datetime(2026, 11, 18, 23, 59, tzinfo=UTC), datetime(2026, 11, 19, 0, 1, tzinfo=UTC),
         datetime(2026, 11, 19, 0, 2, tzinfo=UTC)][:n]
    return pl.DataFrame({
        "chain_id": [1] * n, "block_number": [10, 11, 12][:n], "log_index": [0] * n,
        "block_time": pl.Series(t, dtype=pl.Datetime("us", "UTC")),
        "tx_hash": ["0xa", "0xb", "0xc"][:n], "pair": ["0xp"] * n, "maker": ["0xm"] * n,
        "sender": ["0xr"] * n, "recipient": ["0xm"] * n,
        "amount0_in": pl.Series([Decimal(amount)] * n, dtype=RAW),
        "amount1_in": pl.Series([Decimal(0)] * n, dtype=RAW),
        "amount0_out": pl.Series([Decimal(0)] * n, dtype=RAW),
        "amount1_out": pl.Series([Decimal(7)] * n, dtype=RAW),
        "gas_used": [100_000] * n, "tx_fee_raw": pl.Series([None] * n, dtype=RAW),
    })


def digest(paths) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def test_swaps_are_partitioned_by_chain_and_date(tmp_path):
    lake = Lake(tmp_path)
    lake.write("swaps", swaps())
    rel = [p.relative_to(tmp_path).as_posix() for p in lake.files("swaps")]
    assert rel == ["swaps/chain_id=1/date=2026-11-18/part-0.parquet",
                   "swaps/chain_id=1/date=2026-11-19/part-0.parquet"]
    assert lake.read("swaps").sort("block_number").equals(swaps())


def test_writing_the_same_range_twice_leaves_the_same_files(tmp_path):
    lake = Lake(tmp_path)
    first = lake.write("swaps", swaps())
    before = digest(first)
    again = lake.write("swaps", swaps())
    assert again == first and digest(again) == before
    assert len(list(tmp_path.rglob("*"))) == len(list(tmp_path.rglob("*")))
    assert sorted(p.name for p in (tmp_path / "swaps/chain_id=1/date=2026-11-19").iterdir()) == [
        "part-0.parquet"]


def test_rewriting_a_partition_replaces_its_rows(tmp_path):
    lake = Lake(tmp_path)
    lake.write("swaps", swaps())
    lake.write("swaps", swaps(amount=9).slice(1, 2))
    amounts = lake.read("swaps").sort("block_number")["amount0_in"].to_list()
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
    lake = Lake(tmp_path)
    with pytest.raises(LakeError):
        lake.write("swaps", frame)
    assert lake.files("swaps") == []


def test_an_absent_table_scans_empty_with_its_schema(tmp_path):
    frame = Lake(tmp_path).read("heads")
    assert frame.height == 0 and "indexed_block" in frame.columns


def _tamper(path, frame: pl.DataFrame) -> None:
    """Write other rows into a partition file, leaving its size and modification time as
    they were (what only a reread, never a look at the file's stamp, would notice)."""
    stat = path.stat()
    frame.write_parquet(path, compression="zstd", statistics=True)
    assert path.stat().st_size == stat.st_size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_small_table_is_read_once_and_again_only_when_a_file_changes(tmp_path):
    lake = Lake(tmp_path)
    lake.write("swaps", swaps())
    assert lake.read("swaps")["amount0_in"].to_list() == [Decimal(5)] * 3
    # Other rows of the same size under the same stamp: the kept rows are still served.
    day = lake.files("swaps")[1]
    _tamper(day, pl.read_parquet(day).with_columns(pl.col("tx_hash").str.replace("0x", "0y")))
    assert lake.read("swaps")["tx_hash"].to_list() == ["0xa", "0xb", "0xc"]
    # A partition rewritten (its stamp changes) and one added: both are seen.
    lake.write("swaps", swaps(amount=9).slice(1, 2))
    later = swaps(1).with_columns(block_time=pl.col("block_time") + timedelta(days=3),
                                  block_number=pl.lit(20, pl.Int64))
    lake.write("swaps", later)
    assert lake.read("swaps").sort("block_number")["amount0_in"].to_list() == [
        Decimal(5), Decimal(9), Decimal(9), Decimal(5)]


def test_a_table_above_the_kept_size_is_read_from_its_files_each_time(tmp_path, monkeypatch):
    monkeypatch.setattr("sources.lake.KEPT_BYTES", 0)
    lake = Lake(tmp_path)
    lake.write("swaps", swaps())
    lake.read("swaps")
    day = lake.files("swaps")[1]
    _tamper(day, pl.read_parquet(day).with_columns(pl.col("tx_hash").str.replace("0x", "0y")))
    assert lake.read("swaps")["tx_hash"].to_list() == ["0xa", "0yb", "0yc"]
