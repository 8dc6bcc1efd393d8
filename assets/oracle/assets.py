"""Oracle products: the feed catalog and the price history the edge serves at past instants."""

import dagster as dg
import polars as pl

from assets.checks import product_asset
from assets.domains import keys
from assets.warehouse import Warehouse, materialized
from core.vocabulary import ORACLE_HISTORY_S

GROUP = "oracle"


@product_asset(deps=keys("oracle_feeds"))
def feed_catalog(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every price feed with its attributes, schedule and exponent, by the service's own id
    (the lake's `oracle_feeds`, checked and in id order)."""
    return materialized(warehouse, "feed_catalog",
                        warehouse.scan("oracle_feeds").sort("feed_id").collect())


@product_asset(deps=keys("oracle_updates", "as_of"))
def oracle_history(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every update of the history window (ORACLE_HISTORY_S up to the watermark), per feed in
    publish order: what /prices/at and /v2/updates/price/{publish_time} read."""
    as_of_s = warehouse.clock()["as_of_s"]
    frame = (warehouse.scan("oracle_updates")
             .filter(pl.col("publish_time").is_between(as_of_s - ORACLE_HISTORY_S, as_of_s))
             .sort("feed_id", "publish_time").collect())
    return materialized(warehouse, "oracle_history", frame)
