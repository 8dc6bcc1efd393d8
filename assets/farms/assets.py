"""Farm products: one row per farm contract and pid, from its latest observation."""

import dagster as dg
import polars as pl

from assets.checks import product_asset
from assets.domains import keys
from assets.farms.rows import assemble_farms
from assets.warehouse import Warehouse, materialized
from figures.pair_rows import lp_supply

GROUP = "farms"


@product_asset(deps=keys("farm_pools", "liquidity_events", "address_labels", "tokens",
                         "pair_rows", "token_rows", "as_of"))
def farm_rows(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every farm (chain, contract, pid): TVL and APRs, verification, lifecycle and the data
    quality flags that say what its figures are worth."""
    as_of = warehouse.clock()["as_of"]
    farmed = warehouse.scan("farm_pools").select("chain_id", pair="lp_token").unique()
    pools = (warehouse.scan("pair_rows").join(farmed, on=["chain_id", "pair"], how="semi")
             .select("chain_id", "slug", "pair", "ticker", "liquidity_usd",
                     pair_apr=pl.col("item").str.json_path_match("$.apr").cast(pl.Float64))
             .collect())
    prices = warehouse.scan("token_rows").select("chain_id", "address", "price_usd")
    tokens = (warehouse.scan("tokens").select("chain_id", "address", "name", "symbol",
                                              "decimals")
              .join(prices, on=["chain_id", "address"], how="left").collect())
    labels = (warehouse.scan("address_labels").sort("kind")
              .group_by("chain_id", "address").agg(pl.col("name").first()).collect())
    supply = lp_supply(warehouse.scan("liquidity_events"), as_of).collect()
    frame = assemble_farms(warehouse.scan("farm_pools"), pools, supply, tokens, labels, as_of)
    return materialized(warehouse, "farm_rows", frame)
