"""Products written from a stream of frames: each frame made as it is written, the file their
rows in order, and a failure partway leaves the product as it was and no partial file."""

import polars as pl
import pytest

from assets.warehouse import Warehouse, streamed


def _pieces(pulled: list[int]):
    """Three frames of a and b, recording each as it is made."""
    for index, rows in enumerate(([1], [2, 3], [4])):
        pulled.append(index)
        yield pl.DataFrame({"a": rows, "b": [f"x{r}" for r in rows]})


def test_a_streamed_product_is_its_frames_in_order_each_made_as_written(tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path), lake_root=str(tmp_path / "lake"))
    pulled: list[int] = []
    frame = streamed(_pieces(pulled))
    assert pulled == [0]  # only the first, for the schema
    warehouse.write("p", frame)
    assert pulled == [0, 1, 2]
    assert pl.read_parquet(warehouse.path("p")).to_dict(as_series=False) == {
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

    def failing():
        yield pl.DataFrame({"a": [1], "b": ["x1"]})
        raise RuntimeError("the second frame could not be made")

    with pytest.raises(RuntimeError, match="second frame"):
        warehouse.write("p", streamed(failing()))
    assert pl.read_parquet(warehouse.path("p")).to_dict(as_series=False) == {
        "a": [7], "b": ["kept"]}
    assert [f.name for f in tmp_path.iterdir()] == ["p.parquet"]
