"""A snapshot names the lake it was computed from: every table's Delta version."""

import orjson

from sources.lake import Lake


def test_the_snapshot_records_the_lake_versions_it_was_computed_from(home, lake) -> None:
    store = home / "store" / "snapshots"
    latest = orjson.loads((store / "LATEST").read_bytes())
    manifest = orjson.loads((store / latest["snapshot_id"] / "manifest.json").read_bytes())
    progress = lake.progress()
    assert progress is not None
    assert manifest["lake_versions"] == progress.versions
    assert set(manifest["lake_versions"]) == set(lake.tables())
    # Read at those versions, the lake gives back the rows the products were made from.
    pinned = Lake(lake.root, manifest["lake_versions"])
    assert pinned.read("swaps").height == lake.read("swaps").height
