"""A publish checks what no product check passed: after a run with its checks, nothing; a
product changed outside such a run is checked by the publish, which refuses it if it fails."""

import shutil
from datetime import timedelta

import dagster as dg
import polars as pl
import pytest

import assets.farms.assets
from assets.snapshot.assets import Products, Store, UncheckedProducts, snapshot
from assets.warehouse import Warehouse
from checks.products import piece_outcome, rules_of
from core.store import open_store
from publish.reader import snapshot_ids


def test_a_run_records_every_products_pass_and_a_publish_checks_only_what_changed_since(
        home, tmp_path) -> None:
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    shutil.copytree(home / "store", tmp_path / "store")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    # The run that made them checked every product, each day of the swap legs included.
    assert len(UncheckedProducts(Products(warehouse))) == 0
    assert warehouse.unchecked("swap_legs", rules_of("swap_legs")) == []
    # A pass under other rules is no pass.
    assert warehouse.unchecked("pair_rows", "other rules") == warehouse.files("pair_rows")[None]

    rows = warehouse.scan("pair_rows").collect()
    # One pair's volume below zero, written outside a run: no check has passed it.
    broken = rows.with_columns(volume_h24_usd=pl.when(pl.int_range(pl.len()) == 0)
                               .then(-1.0).otherwise("volume_h24_usd"))
    warehouse.write("pair_rows", broken)
    unchecked = UncheckedProducts(Products(warehouse))
    assert list(unchecked) == ["pair_rows"] and unchecked["pair_rows"].equals(broken)
    store = Store(url=str(tmp_path / "store"))
    before = snapshot_ids(open_store(store.url))
    with pytest.raises(dg.Failure, match="refusing to publish: pair_rows"):
        dg.materialize([snapshot], resources={"warehouse": warehouse, "store": store})
    assert snapshot_ids(open_store(store.url)) == before

    # Put right, the product is checked by the publish itself and published.
    warehouse.write("pair_rows", rows)
    assert list(UncheckedProducts(Products(warehouse))) == ["pair_rows"]
    assert dg.materialize([snapshot], resources={"warehouse": warehouse, "store": store}).success
    assert len(snapshot_ids(open_store(store.url))) == len(before) + 1


def test_a_rule_across_products_failing_in_its_products_step_blocks_the_publish(
        home, tmp_path, monkeypatch) -> None:
    # Two farms observed three hours before the watermark yet not marked stale: the rule
    # no_stale_farm_shown_fresh (bound: two hours) finds both in the farm rows' own step, and
    # the snapshot, which reads them, is not published.
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    shutil.copytree(home / "store", tmp_path / "store")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    as_of = warehouse.clock()["as_of"]
    whole = assets.farms.assets.assemble_farms

    def fresh_looking(*args):
        farms = whole(*args)
        early = pl.int_range(pl.len()) < 2
        return farms.with_columns(
            updated_at=pl.when(early).then(pl.lit(as_of - timedelta(hours=3)))
            .otherwise("updated_at").cast(farms.schema["updated_at"]),
            stale=pl.when(early).then(False).otherwise("stale"))

    monkeypatch.setattr(assets.farms.assets, "assemble_farms", fresh_looking)
    store = Store(url=str(tmp_path / "store"))
    before = snapshot_ids(open_store(store.url))
    result = dg.materialize([assets.farms.assets.farm_rows, snapshot],
                            resources={"warehouse": warehouse, "store": store},
                            raise_on_error=False)
    assert not result.success
    evaluations = {e.check_name: (e.passed, e.metadata["failure_count"].value)
                   for e in result.get_asset_check_evaluations()}
    assert evaluations["no_stale_farm_shown_fresh"] == (False, 2)
    assert [m.asset_key.path[-1] for m in result.get_asset_materialization_events()] == [
        "farm_rows"]
    assert snapshot_ids(open_store(store.url)) == before


def test_a_day_product_whose_rules_changed_is_checked_a_file_at_a_time(home, tmp_path) -> None:
    """A product made a day at a time repeats its key across days and a day's segments of
    hours (a holder changes on many), so a publish checking it under new rules checks each
    file alone, as its step does."""
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    record = tmp_path / "warehouse" / "_checked" / "holder_changes.json"
    record.write_text(record.read_text().replace(rules_of("holder_changes"), "older rules"))
    unchecked = UncheckedProducts(Products(warehouse))
    assert list(unchecked) == ["holder_changes"]
    assert len(warehouse.files("holder_changes")) > 1
    # Whole, the days' rows break the key's uniqueness; a file at a time, none does.
    assert not piece_outcome("holder_changes", unchecked["holder_changes"]).passed
    assert [o.passed for o in unchecked.outcomes()] == [True]
