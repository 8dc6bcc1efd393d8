"""A snapshot names the lake and the products it was computed from: every table's Delta
version."""

import orjson

from assets.warehouse import Warehouse
from checks.products import PRODUCT_SCHEMAS
from sources.lake import LakeWriter


def test_the_snapshot_records_the_lake_versions_it_was_computed_from(home, lake) -> None:
    store = home / "store" / "snapshots"
    latest = orjson.loads((store / "LATEST").read_bytes())
    manifest = orjson.loads((store / latest["snapshot_id"] / "manifest.json").read_bytes())
    progress = lake.progress()
    assert progress is not None
    assert manifest["lake_versions"] == progress.versions
    assert set(manifest["lake_versions"]) == set(lake.tables())
    # Read at those versions, the lake gives back the rows the products were made from.
    pinned = LakeWriter(lake.root, manifest["lake_versions"])
    assert pinned.read("swaps").height == lake.read("swaps").height


def test_the_snapshot_records_the_version_of_every_product_it_published(home, lake) -> None:
    store = home / "store" / "snapshots"
    latest = orjson.loads((store / "LATEST").read_bytes())
    manifest = orjson.loads((store / latest["snapshot_id"] / "manifest.json").read_bytes())
    warehouse = Warehouse(root=str(home / "warehouse"), lake_root=lake.root)
    assert manifest["warehouse_versions"] == {
        name: warehouse.version(name) for name in PRODUCT_SCHEMAS}
    # The pair table the edge serves is the pair rows at that version.
    version = manifest["warehouse_versions"]["pair_rows"]
    assert warehouse.scan("pair_rows", version).collect().height == \
        manifest["tables"]["pairs"]["rows"]
