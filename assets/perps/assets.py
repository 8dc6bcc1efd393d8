"""Perp products: the market list, history points and liquidation days."""

import dagster as dg

from assets.checks import product_asset
from assets.domains import keys
from assets.perps.history import daily_liquidations, history_points, market_list
from assets.warehouse import Warehouse, materialized

GROUP = "perps"


@product_asset(deps=keys("perp_markets", "perp_snapshots", "venues", "chains", "as_of"))
def perp_list(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every perp market with the perp block of its pair row (GET /perps)."""
    frame = market_list(warehouse.scan("perp_markets"), warehouse.scan("perp_snapshots"),
                        warehouse.scan("venues"), warehouse.scan("chains"),
                        warehouse.clock()["as_of"])
    return materialized(warehouse, "perp_list", frame)


@product_asset(deps=keys("perp_snapshots", "as_of"))
def perp_history(warehouse: Warehouse) -> dg.MaterializeResult:
    """Each market's history points at 5 minutes and an hour."""
    return materialized(warehouse, "perp_history", history_points(
        warehouse.scan("perp_snapshots"), warehouse.clock()["as_of"]))


@product_asset(deps=keys("liquidations", "liquidation_heartbeats", "as_of"))
def liquidation_days(warehouse: Warehouse) -> dg.MaterializeResult:
    """Liquidations per UTC day, per market and for the whole venue, while the feed was alive."""
    return materialized(warehouse, "liquidation_days", daily_liquidations(
        warehouse.scan("liquidations"), warehouse.scan("liquidation_heartbeats"),
        warehouse.clock()["as_of"]))
