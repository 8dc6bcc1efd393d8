"""Wallet products: the accounted ledger, positions, rounds, funding and profiles (the window
metrics are SQL models over the ledger and positions)."""

import dagster as dg
import polars as pl

from assets.wallets.behaviour import peak_capital, swap_traits
from assets.wallets.funding import assemble_funding
from assets.wallets.ledger import account, wallet_events
from assets.wallets.positions import ACCOUNTS, assemble_positions, assemble_rounds
from assets.wallets.profiles import RANKING_INPUTS, assemble_profiles, assemble_rankings
from assets.warehouse import Warehouse, materialized

GROUP = "wallets"


def _keys(*names: str) -> list[dg.AssetKey]:
    """Keys of the tables read: raw lake tables, market products and wallet products."""
    market = {"as_of", "swap_legs", "pair_tokens", "token_rows", "quote_prices", "pair_risk"}
    return [dg.AssetKey(["market" if n in market else GROUP if n.startswith("wallet")
                         else "chains" if n == "chain_records" else "lake", n]) for n in names]


@dg.asset(key_prefix=GROUP, group_name=GROUP,
          deps=_keys("swap_legs", "swaps", "pair_tokens", "transfers", "liquidity_events",
                     "tokens", "as_of"))
def wallet_ledger(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every swap and bare token movement of every wallet in chain order, with average-cost
    accounting: held, cost basis, realised profit, the cost a sell closed, and rounds."""
    frames = warehouse.frames(("swap_legs", "swaps", "pair_tokens", "transfers",
                               "liquidity_events", "tokens"))
    return materialized(warehouse, "wallet_ledger",
                        account(wallet_events(frames, warehouse.clock()["as_of"])))


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=_keys("wallet_ledger", "token_rows"))
def wallet_positions(warehouse: Warehouse) -> dg.MaterializeResult:
    """One row per wallet and token it swapped, every round averaged together, marked now."""
    frame = assemble_positions(warehouse.scan("wallet_ledger").select(ACCOUNTS).collect(),
                               warehouse.scan("token_rows").collect())
    return materialized(warehouse, "wallet_positions", frame)


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=_keys("wallet_ledger", "as_of"))
def wallet_rounds(warehouse: Warehouse) -> dg.MaterializeResult:
    """One row per round: from the first unit in to the last unit out of a position."""
    frame = assemble_rounds(warehouse.scan("wallet_ledger").select(ACCOUNTS).collect(),
                            warehouse.clock()["as_of_s"])
    return materialized(warehouse, "wallet_rounds", frame)


@dg.asset(key_prefix=GROUP, group_name=GROUP,
          deps=_keys("transfers", "chains", "tokens", "quote_prices", "as_of"))
def wallet_funding(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every native-token transfer into a wallet, priced: who funded it and when."""
    frame = assemble_funding(warehouse.frames(("transfers", "chains", "tokens",
                                               "quote_prices")), warehouse.clock()["as_of"])
    return materialized(warehouse, "wallet_funding", frame)


@dg.asset(key_prefix=GROUP, group_name=GROUP,
          deps=_keys("wallet_ledger", "wallet_windows", "wallet_funding", "pair_tokens",
                     "pair_risk", "tokens", "address_labels", "chain_records"))
def wallet_profiles(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every wallet's profile: type, tier, labels, scores and signals, cluster, first and last
    activity, and one metrics record per window."""
    ledger = warehouse.scan("wallet_ledger").select(
        "chain_id", "wallet", "pair", "side", "ts", "cost_change").collect()
    pools = warehouse.scan("pair_tokens").collect()
    parts = {
        "ledger": ledger, "pair_tokens": pools,
        "traits": swap_traits(ledger, pools), "capital": peak_capital(ledger),
        "windows": warehouse.scan("wallet_windows").collect(),
        "funding": warehouse.scan("wallet_funding").collect(),
        "pair_risk": warehouse.scan("pair_risk").collect(),
        "tokens": warehouse.scan("tokens").collect(),
        "labels": warehouse.scan("address_labels").collect(),
        "chains": warehouse.scan("chain_records").select("chain_id", "slug").collect(),
    }
    frame = assemble_profiles(parts)
    return materialized(warehouse, "wallet_profiles", frame.drop(
        pl.selectors.by_dtype(pl.List, pl.Struct) - pl.selectors.by_name("item")))


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=_keys("wallet_profiles", "wallet_windows"))
def wallet_rankings(warehouse: Warehouse) -> dg.MaterializeResult:
    """One ranking row per wallet and window: what GET /wallets filters and sorts on, that
    window's metrics, and the wallet's parts of the list item (spec 2.5)."""
    profiles = warehouse.scan("wallet_profiles").select(RANKING_INPUTS).collect()
    frame = assemble_rankings(profiles, warehouse.scan("wallet_windows").collect())
    return materialized(warehouse, "wallet_rankings", frame)
