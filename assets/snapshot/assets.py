"""The snapshot: every checked product published to the object store, atomically."""

from datetime import timedelta

import dagster as dg

from assets.chains.items import chain_items, config_document
from assets.warehouse import Warehouse
from checks.products import PRODUCT_SCHEMAS, validate_products
from publish.cursor import default_signer
from publish.snapshot import PagedList, Publisher, ServingTable
from publish.store import open_store

DOMAINS = {"chain_records": "chains", "config": "chains", "pair_rows": "market"}
# What the edge reads of a pair row to look it up and answer it.
PAIR_TABLE = ("chain_id", "pair", "item")


class Store(dg.ConfigurableResource):
    """The object store snapshots go to: a directory path or s3://bucket/prefix."""

    url: str
    retention_hours: float = 24.0


@dg.asset(key_prefix="publish", group_name="publish",
          deps=[dg.AssetKey([DOMAINS[name], name]) for name in PRODUCT_SCHEMAS]
          + [dg.AssetKey(["market", "as_of"])])
def snapshot(context: dg.AssetExecutionContext, warehouse: Warehouse,
             store: Store) -> dg.MaterializeResult:
    """Publishes the checked products as one snapshot and flips LATEST to it."""
    frames = {name: warehouse.scan(name).collect() for name in PRODUCT_SCHEMAS}
    outcomes = validate_products(frames)
    broken = [o.summary() for o in outcomes if not o.passed]
    if broken:
        raise dg.Failure("refusing to publish: " + "; ".join(broken))
    as_of = warehouse.scan("as_of").collect()["as_of"][0]
    publisher = Publisher(open_store(store.url), default_signer(),
                          retention=timedelta(hours=store.retention_hours),
                          progress=context.log.info)
    records = frames["chain_records"]
    manifest = publisher.publish(
        as_of,
        lists=[PagedList("chains", chain_items(records), ("chain_id", "slug"))],
        documents={"config": config_document(records, frames["config"])},
        tables=[ServingTable("pairs", frames["pair_rows"].select(PAIR_TABLE),
                             ("chain_id", "pair"))],
    )
    return dg.MaterializeResult(metadata={
        "snapshot_id": manifest.snapshot_id, "as_of": manifest.as_of,
        "objects": len(manifest.objects), "store": store.url,
    })
