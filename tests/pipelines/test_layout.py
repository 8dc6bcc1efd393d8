"""A warehouse written in an earlier layout than this code reads: refused, and made again."""

import polars as pl
import pytest
from click.testing import CliRunner

from assets.tables import FORMAT, FORMAT_RECORD, KEPT, WarehouseFormatError
from assets.warehouse import Warehouse
from pipelines.cli.market import materialize
from pipelines.cli.up import remove_unreadable_warehouse


def test_a_warehouse_of_an_earlier_layout_is_refused_and_materialise_says_how_to_rebuild(
        tmp_path, monkeypatch) -> None:
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(tmp_path / "lake"))
    # A new warehouse is marked with this layout by its first write, and written on.
    warehouse.write("p", pl.DataFrame({"n": [1]}))
    assert warehouse.recall(FORMAT_RECORD) == {"format": FORMAT}
    assert warehouse.stale_format() is None
    warehouse.write("p", pl.DataFrame({"n": [2]}))
    # One written before the layout was recorded (its products, no record) is the first layout.
    (tmp_path / "warehouse" / KEPT / f"{FORMAT_RECORD}.json").unlink()
    with pytest.raises(WarehouseFormatError, match=r"layout 1.*remove it and materialise again"):
        warehouse.write("p", pl.DataFrame({"n": [3]}))
    assert warehouse.scan("p").collect()["n"].to_list() == [2]
    # `materialize` says so and fails before any step runs; `up` removes it to make it again.
    monkeypatch.setenv("CHAINTAPE_HOME", str(tmp_path))
    result = CliRunner().invoke(materialize, [])
    assert result.exit_code == 1 and "written in layout 1" in result.output
    remove_unreadable_warehouse()
    assert not (tmp_path / "warehouse").exists()
    remove_unreadable_warehouse()
