"""Products as Delta tables: written from a stream of frames, each frame made as it is written;
a version per write, readable as of any version kept; a failure partway commits nothing and
leaves no file a reader sees; a day's write replaces that day alone."""

from datetime import timedelta

import polars as pl
import pytest
from deltalake import DeltaTable

from assets.tables import streamed
from assets.warehouse import Warehouse


def _pieces(pulled: list[int]):
    """Three frames of a and b, recording each as it is made."""
    for index, rows in enumerate(([1], [2, 3], [4])):
        pulled.append(index)
        yield pl.DataFrame({"a": rows, "b": [f"x{r}" for r in rows]})


def _data_files(warehouse: Warehouse, name: str) -> list[str]:
    return sorted(p.relative_to(warehouse.path(name)).as_posix()
                  for p in warehouse.path(name).rglob("*.parquet")
                  if not any(part.startswith(("_", ".")) for part in p.parts[-2:]))


def test_a_streamed_product_is_its_frames_in_order_each_made_as_written(tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path), lake_root=str(tmp_path / "lake"))
    pulled: list[int] = []
    frame = streamed(_pieces(pulled))
    assert pulled == [0]  # only the first, for the schema
    warehouse.write("p", frame)
    assert pulled == [0, 1, 2]
    assert warehouse.scan("p").collect().to_dict(as_series=False) == {
        "a": [1, 2, 3, 4], "b": ["x1", "x2", "x3", "x4"]}


def test_a_streamed_frame_honours_columns_filters_and_row_limits() -> None:
    chosen = streamed(_pieces([])).filter(pl.col("a") != 2).select("b").collect()
    assert chosen.to_dict(as_series=False) == {"b": ["x1", "x3", "x4"]}
    pulled: list[int] = []
    assert streamed(_pieces(pulled)).head(2).collect()["a"].to_list() == [1, 2]
    assert pulled == [0, 1]  # the limit was reached in the second frame: the third never made


def test_a_failure_partway_keeps_the_previous_product_and_leaves_no_partial_file(
        tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path), lake_root=str(tmp_path / "lake"))
    warehouse.write("p", pl.DataFrame({"a": [7], "b": ["kept"]}))
    before = _data_files(warehouse, "p")

    def failing():
        yield pl.DataFrame({"a": [1], "b": ["x1"]})
        raise RuntimeError("the second frame could not be made")

    with pytest.raises(RuntimeError, match="second frame"):
        warehouse.write("p", streamed(failing()))
    assert warehouse.scan("p").collect().to_dict(as_series=False) == {"a": [7], "b": ["kept"]}
    assert warehouse.version("p") == 0
    assert _data_files(warehouse, "p") == before and len(before) == 1
    assert [p.name for p in warehouse.path("p").iterdir() if p.name.startswith(".")] == []


def test_every_write_is_a_version_read_as_of_by_any_delta_reader(tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path), lake_root=str(tmp_path / "lake"))
    first = pl.DataFrame({"n": [1, 2]}, schema={"n": pl.UInt32})
    # A fingerprint column: the same bits, as a type Delta can declare.
    second = pl.DataFrame({"n": [3], "key": [2**64 - 1]}, schema={"n": pl.UInt32,
                                                                 "key": pl.UInt64})
    assert warehouse.write("p", first) == 0
    assert warehouse.write("p", second) == 1
    assert warehouse.scan("p", version=0).collect()["n"].to_list() == [1, 2]
    assert warehouse.scan("p").collect().to_dict(as_series=False) == {"n": [3], "key": [-1]}
    # Another engine's reader of the Delta table, at either version.
    assert pl.read_delta(str(warehouse.path("p")), version=0)["n"].to_list() == [1, 2]
    assert DeltaTable(str(warehouse.path("p"))).to_pyarrow_table().to_pydict() == {
        "n": [3], "key": [-1]}


def test_a_day_replaces_its_own_partition_and_days_read_in_order(tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path), lake_root=str(tmp_path / "lake"))
    warehouse.write("d", pl.DataFrame({"x": [2]}), day="2026-11-02")
    warehouse.write("d", pl.DataFrame({"x": [1]}), day="2026-11-01")
    warehouse.write("d", pl.DataFrame({"x": [3, 4]}), day="2026-11-02")
    assert warehouse.version("d") == 2
    assert warehouse.product_days("d", ["2026-11-02", "2026-11-01"]).collect()["x"].to_list() \
        == [1, 3, 4]
    assert sorted(pl.read_delta(str(warehouse.path("d"))).rows()) == [
        (1, "2026-11-01", "00"), (3, "2026-11-02", "00"), (4, "2026-11-02", "00")]


def test_a_day_in_hours_replaces_its_hours_from_the_one_written(tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path), lake_root=str(tmp_path / "lake"))
    day = "2026-11-02"
    warehouse.write("d", pl.DataFrame({"x": [0]}), day="2026-11-01")
    warehouse.write("d", pl.DataFrame({"x": [1]}), day=day)
    warehouse.write("d", pl.DataFrame({"x": [5]}), day=day, hour=5)
    warehouse.write("d", pl.DataFrame({"x": [7]}), day=day, hour=7, made={"day": day})
    assert warehouse.hours("d", day) == [0, 5, 7]
    assert warehouse.product_days("d", [day]).collect()["x"].to_list() == [1, 5, 7]
    assert warehouse.made_record("d") == {"day": day}
    # From hour 6: the 7 goes, the 5 (which begins before) stays; the record is the write's.
    warehouse.write("d", pl.DataFrame({"x": [6]}), day=day, hour=6)
    assert warehouse.product_days("d", [day]).collect()["x"].to_list() == [1, 5, 6]
    assert warehouse.made_record("d") is None
    # A vacuum of the file the 6 replaced commits after the write: the record is the write's.
    warehouse.write("d", pl.DataFrame({"x": [8]}), day=day, hour=8, made={"day": day, "n": 2})
    assert warehouse.vacuum("d", retention=timedelta(0))
    assert warehouse.made_record("d") == {"day": day, "n": 2}
    # The whole day again: every hour of it goes, the day before stays.
    warehouse.write("d", pl.DataFrame({"x": [9]}), day=day)
    assert warehouse.hours("d", day) == [0]
    assert warehouse.product_days("d", ["2026-11-01", day]).collect()["x"].to_list() == [0, 9]
    assert warehouse.made_record("d") is None
    with pytest.raises(ValueError, match="hour 24"):
        warehouse.write("d", pl.DataFrame({"x": [1]}), day=day, hour=24)


def test_vacuum_keeps_the_versions_inside_the_window_and_drops_the_rest(tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path), lake_root=str(tmp_path / "lake"))
    for n in range(3):
        warehouse.write("p", pl.DataFrame({"n": [n]}))
    # Written just now: every version is inside the default window, so each stays readable.
    assert [warehouse.scan("p", version=v).collect().item() for v in range(3)] == [0, 1, 2]
    assert len(_data_files(warehouse, "p")) == 3
    deleted = warehouse.vacuum("p", retention=timedelta(0))
    assert len(deleted) == 2 and len(_data_files(warehouse, "p")) == 1
    assert warehouse.scan("p").collect().item() == 2


def _objects(s3, bucket: str, prefix: str) -> list[str]:
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return sorted(o["Key"][len(prefix):] for o in listed)


def test_a_warehouse_on_s3_writes_versions_days_and_check_records_as_objects(s3_env) -> None:
    """The same warehouse under an s3:// prefix (a real S3 endpoint): versions, days, the check
    record and a failed write that leaves neither a commit nor an object behind."""
    import boto3

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="products")
    warehouse = Warehouse(root="s3://products/wh", lake_root="s3://products/lake")
    assert warehouse.remote and warehouse.products() == []
    assert warehouse.write("p", pl.DataFrame({"n": [1, 2]})) == 0
    assert warehouse.write("p", streamed(iter([pl.DataFrame({"n": [3]}),
                                               pl.DataFrame({"n": [4]})]))) == 1
    assert warehouse.scan("p", version=0).collect()["n"].to_list() == [1, 2]
    assert warehouse.scan("p").collect()["n"].to_list() == [3, 4]
    warehouse.write("d", pl.DataFrame({"x": [2]}), day="2026-11-02")
    warehouse.write("d", pl.DataFrame({"x": [1]}), day="2026-11-01")
    assert warehouse.product_days("d", ["2026-11-02", "2026-11-01"]).collect()["x"].to_list() \
        == [1, 2]
    assert warehouse.products() == ["d", "p"]
    parts = [k for k in _objects(s3, "products", "wh/p/") if k.endswith(".parquet")]
    assert len(parts) == 2 and all(k.startswith("part-") for k in parts)

    def failing():
        yield pl.DataFrame({"n": [9]})
        raise RuntimeError("the second frame could not be made")

    with pytest.raises(RuntimeError, match="second frame"):
        warehouse.write("p", streamed(failing()))
    assert warehouse.version("p") == 1 and warehouse.scan("p").collect()["n"].to_list() == [3, 4]
    assert [k for k in _objects(s3, "products", "wh/p/") if k.endswith(".parquet")] == parts

    latest = warehouse.files("p")[None]
    assert warehouse.unchecked("p", "rules-1") == latest
    warehouse.passed("p", latest, "rules-1")
    assert warehouse.unchecked("p", "rules-1") == [] and "_checked/p.json" in _objects(
        s3, "products", "wh/")
    assert warehouse.unchecked("p", "rules-2") == latest  # other rules: not checked by them
    assert len(warehouse.vacuum("p", retention=timedelta(0))) == 1
    assert [k for k in _objects(s3, "products", "wh/p/") if k.endswith(".parquet")] == [
        latest[0].rsplit("/", 1)[1]]
    # A kept record is an object beside the products, not one of them, replaced as a whole.
    assert warehouse.recall("names") == {}
    warehouse.remember("names", {"a": {"1": "x"}})
    warehouse.remember("names", {"b": {"2": "y"}})
    assert warehouse.recall("names") == {"b": {"2": "y"}}
    assert "_kept/names.json" in _objects(s3, "products", "wh/")
    assert warehouse.products() == ["d", "p"]
