"""The chains domain: /config's value lists beside the chain records (a SQL model)."""

import dagster as dg
import polars as pl

from assets.checks import product_asset
from assets.domains import keys
from assets.warehouse import Warehouse, materialized
from core import vocabulary

GROUP = "chains"


@product_asset(deps=keys("chain_records"))
def config(warehouse: Warehouse) -> dg.MaterializeResult:
    """What /config lists besides the chains: every value the service accepts in a request."""
    records = warehouse.scan("chain_records").select("min_liquidity_usd").collect()
    frame = pl.DataFrame({
        "resolutions": [vocabulary.RESOLUTIONS],
        "tx_types": [vocabulary.TX_TYPES],
        "sort_options": [vocabulary.SORT_OPTIONS],
        "timeframes": [vocabulary.TIMEFRAMES],
        "min_liquidity_usd": [float(records.select(pl.col("min_liquidity_usd").min()).item()
                                    or 0.0)],
    })
    return materialized(warehouse, "config", frame)
