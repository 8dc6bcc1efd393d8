"""Which domain each product belongs to: the one mapping that names every product's asset key
(`<domain>/<product>`; a raw table's is `lake/<table>`), for deps, checks and the snapshot."""

import dagster as dg

from sources.lake import TABLES

PRODUCTS: dict[str, str] = {
    **{name: "market" for name in (
        "as_of", "quote_prices", "pair_tokens", "pair_state", "pair_activity", "pair_risk",
        "pair_rows", "swap_legs", "pair_days", "holder_changes", "reserve_days",
        "holder_balances",
        "token_activity", "token_basis", "token_rows", "registry_tokens", "liquidity_trades")},
    **{name: "chains" for name in ("chain_records", "config")},
    **{name: "wallets" for name in (
        "wallet_ledger", "wallet_book_states", "token_marks", "wallet_positions", "wallet_rounds",
        "wallet_traits", "wallet_windows", "wallet_funding", "wallet_profiles",
        "wallet_rankings", "cohort_members", "token_cohorts")},
    **{name: "boards" for name in (
        "board_pairs", "board_router_flows", "board_pair_flows", "board_routed",
        "board_row_buyers", "board_rows", "season_boards")},
    "farm_rows": "farms",
    **{name: "perps" for name in ("perp_list", "perp_history", "liquidation_days")},
    **{name: "oracle" for name in ("feed_catalog", "oracle_history")},
    "snapshot": "publish",
}

# A step tagged so holds a lake day's rows or more in memory (the day steps, and those reading
# days of legs or every holder: each adds most of a GB at 10M swaps): a run's executor runs it
# beside small steps, never beside another so tagged, so two at once do not add their peaks.
HEAVY_TAG = "chaintape/heavy"


def product_key(name: str) -> dg.AssetKey:
    """The asset key of a product."""
    return dg.AssetKey([PRODUCTS[name], name])


def key(name: str) -> dg.AssetKey:
    """The asset key of a table as the warehouse reads it: the raw lake table of that name
    when there is one (`Warehouse.scan` reads the lake first), else the product."""
    return dg.AssetKey(["lake", name]) if name in TABLES else product_key(name)


# The product that pins the lake's table versions a run reads (`Warehouse.lake`).
PIN = "as_of"


def keys(*names: str) -> list[dg.AssetKey]:
    """The asset keys of the tables an asset reads: its deps, with the run's pin when one of
    them is a raw table, so that every step reads the lake where its own run pinned it (a
    step run before the pin would read it where the previous run left it)."""
    found = [key(name) for name in names]
    if any(name in TABLES for name in names) and PIN not in names:
        found.append(product_key(PIN))
    return found
