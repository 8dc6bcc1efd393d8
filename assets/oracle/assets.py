"""Oracle products: the feed catalog and the price history the edge serves at past instants."""

import dagster as dg
import polars as pl

from assets.checks import product_asset
from assets.domains import keys
from assets.warehouse import Warehouse, materialized
from core.vocabulary import ORACLE_HISTORY_S, RESOLUTION_SECONDS

GROUP = "oracle"


@product_asset(deps=keys("oracle_feeds"))
def feed_catalog(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every price feed with its attributes, schedule and exponent, by the service's own id
    (the lake's `oracle_feeds`, checked and in id order)."""
    return materialized(warehouse, "feed_catalog",
                        warehouse.scan("oracle_feeds").sort("feed_id").collect())


@product_asset(deps=keys("oracle_updates", "as_of"))
def oracle_history(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every update of the history window (ORACLE_HISTORY_S up to the watermark) from the start
    of the UTC day it opens in, per feed in publish order: what /prices/at and
    /v2/updates/price/{publish_time} read."""
    as_of_s = warehouse.clock()["as_of_s"]
    # Whole days, so that the oldest day's published part stays the same until it leaves the
    # window whole (the edge answers within the window only).
    day = RESOLUTION_SECONDS["1d"]
    opens = (as_of_s - ORACLE_HISTORY_S) // day * day
    frame = (warehouse.scan("oracle_updates")
             .filter(pl.col("publish_time").is_between(opens, as_of_s))
             .sort("feed_id", "publish_time").collect())
    return materialized(warehouse, "oracle_history", frame)
