import hashlib
from datetime import UTC, datetime
from decimal import Decimal

import polars as pl
import pytest

from checks.schemas.types import RAW
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
