"""A token's trader cohorts (docs/wallets.md, "Cohorts"): every cohort with its count, what it
holds now and its share of the supply, what it bought, sold and realised, and its net flow in
each pair window, as of the ranking that made them."""

from typing import Any

import orjson
import polars as pl

from core.vocabulary import COHORTS, PAIR_WINDOWS
from edge.addresses import ChainRef
from edge.memo import per_snapshot
from edge.routes.market.tokens import token_row
from edge.snapshots import snapshot_json, table
from edge.spans import indexed
from edge.web.http import Request, Response
from edge.web.registry import Params
from publish.reader import Snapshot
from publish.wallet_rankings import ranked_at

cohorts_of = indexed("token_cohorts", ("chain_id", "token"))
members_of = indexed("cohort_members", ("chain_id", "token", "cohort"))


@per_snapshot(kept=2)
def cohorts_as_of(snapshot: Snapshot) -> str:
    """The watermark the snapshot's cohorts were made as of (their ranking's)."""
    return ranked_at(table(snapshot, "token_cohorts").head(1)) or snapshot.manifest.as_of


def cohort_wallets(snapshot: Snapshot, chain_id: int, token: str, cohort: str) -> pl.DataFrame:
    """The wallets of one of a token's cohorts."""
    return members_of(snapshot).rows((chain_id, token, cohort)).select("wallet")


def _item(cohort: str, row: dict[str, Any] | None, supplied: bool) -> dict[str, Any]:
    """A cohort's item; one without members holds nothing (a share of 0 where the supply is
    known, else null)."""
    found = row or {}
    return {"cohort": cohort, "title": COHORTS[cohort], "wallets": found.get("wallets", 0),
            "held": found.get("held", 0.0),
            "share_of_supply": found.get("share_of_supply", 0.0 if supplied else None),
            "bought_usd": found.get("bought_usd", 0.0), "sold_usd": found.get("sold_usd", 0.0),
            "realized_pnl_usd": found.get("realized_usd", 0.0),
            "net_flow_usd": {w: found.get(f"net_flow_usd_{w}", 0.0) for w in PAIR_WINDOWS}}


async def get_cohorts(request: Request, params: Params) -> Response:
    """Every cohort of a token's traders, in order, one no wallet is in with zeroes; 404 when
    the chain lists no such token."""
    snapshot = request.state.snapshot
    chain: ChainRef = params["chain"]
    address = params["address"]
    # The token's row (404 when none) says whether its supply is known.
    token = orjson.loads(token_row(snapshot, chain, address))
    rows = {row["cohort"]: row for row in
            cohorts_of(snapshot).rows((chain.chain_id, address)).iter_rows(named=True)}
    as_of = cohorts_as_of(snapshot)
    supplied = (token.get("total_supply") or 0) > 0
    return snapshot_json(snapshot, {
        "chain": {"slug": chain.slug, "chain_id": chain.chain_id}, "token": address,
        "as_of": as_of, "items": [_item(cohort, rows.get(cohort), supplied) for cohort in COHORTS]},
        as_of)


HANDLERS = {("GET", "/chains/{chain}/tokens/{address}/cohorts"): get_cohorts}
