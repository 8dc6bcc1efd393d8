"""A publish checks what no product check passed: after a run with its checks, nothing; a
product changed outside such a run is checked by the publish, which refuses it if it fails."""

import shutil

import dagster as dg
import polars as pl
import pytest

from assets.snapshot.assets import Products, Store, Unchecked, snapshot
from assets.warehouse import Warehouse
from checks.products import rules_of
from publish.snapshot import snapshot_ids
from publish.store import open_store


def test_a_run_records_every_products_pass_and_a_publish_checks_only_what_changed_since(
        home, tmp_path) -> None:
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    shutil.copytree(home / "store", tmp_path / "store")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    # The run that made them checked every product, each day of the swap legs included.
    assert len(Unchecked(Products(warehouse))) == 0
    assert warehouse.unchecked("swap_legs", rules_of("swap_legs")) == []
    # A pass under other rules is no pass.
    assert warehouse.unchecked("pair_rows", "other rules") == warehouse.files("pair_rows")[None]

    rows = warehouse.scan("pair_rows").collect()
    # One pair's volume below zero, written outside a run: no check has passed it.
    broken = rows.with_columns(volume_h24_usd=pl.when(pl.int_range(pl.len()) == 0)
                               .then(-1.0).otherwise("volume_h24_usd"))
    warehouse.write("pair_rows", broken)
    unchecked = Unchecked(Products(warehouse))
    assert list(unchecked) == ["pair_rows"] and unchecked["pair_rows"].equals(broken)
    store = Store(url=str(tmp_path / "store"))
    before = snapshot_ids(open_store(store.url))
    with pytest.raises(dg.Failure, match="refusing to publish: pair_rows"):
        dg.materialize([snapshot], resources={"warehouse": warehouse, "store": store})
    assert snapshot_ids(open_store(store.url)) == before

    # Put right, the product is checked by the publish itself and published.
    warehouse.write("pair_rows", rows)
    assert list(Unchecked(Products(warehouse))) == ["pair_rows"]
    assert dg.materialize([snapshot], resources={"warehouse": warehouse, "store": store}).success
    assert len(snapshot_ids(open_store(store.url))) == len(before) + 1
