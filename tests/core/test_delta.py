"""A Delta root finds a table's newest version from its log's listing, and opens a table at a
version once for the process, yet never serves a removed table's state for the one made again."""

import shutil

import polars as pl
from deltalake import write_deltalake

from core.delta import DeltaRoot


def _write(root, name, values, mode="append"):
    write_deltalake(f"{root}/{name}", pl.DataFrame({"x": values}).to_arrow(), mode=mode)


def test_the_newest_version_is_read_from_the_logs_listing(tmp_path):
    root = DeltaRoot.at(tmp_path)
    assert root.latest_version("t") is None
    assert not root.exists("t")
    for values in ([1], [2, 3], [4]):
        _write(tmp_path, "t", values)
    # Three commits: versions 0, 1 and 2.
    assert root.latest_version("t") == 2
    assert root.exists("t")
    # A checkpoint's files beside the commits are not commits.
    root.open("t").create_checkpoint()
    assert root.latest_version("t") == 2


def test_a_table_at_a_version_is_opened_once_and_a_remade_one_is_not_mistaken(tmp_path):
    root = DeltaRoot.at(tmp_path)
    _write(tmp_path, "t", [1, 2])
    _write(tmp_path, "t", [3])
    first = root.read("t", 0)
    assert first is root.read("t", 0)
    assert sorted(pl.from_arrow(first.to_pyarrow_table())["x"].to_list()) == [1, 2]
    assert sorted(pl.from_arrow(root.read("t", 1).to_pyarrow_table())["x"].to_list()) == [1, 2, 3]
    # Removed and written again: its version 0 is another commit, with other rows.
    shutil.rmtree(tmp_path / "t")
    _write(tmp_path, "t", [7])
    again = root.read("t", 0)
    assert again is not first
    assert pl.from_arrow(again.to_pyarrow_table())["x"].to_list() == [7]
    assert root.read("absent", 0) is None
