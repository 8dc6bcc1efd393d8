"""Farms (spec 4.9): the list across up to eight chains and one farm by its contract."""

import polars as pl

from edge.addresses import ChainRef, normalize
from edge.memo import per_snapshot
from edge.paging import Listing, page
from edge.snapshots import snapshot_headers, table
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.farms import FarmQuery, farm_list, farm_scope
from publish.reader import Snapshot


@per_snapshot(kept=4)
def farm_chains(snapshot: Snapshot) -> tuple[int, ...]:
    """Every chain with a farm, by id: the list's chains when none are named."""
    return tuple(sorted(table(snapshot, "farms")["chain_id"].unique().to_list()))


async def list_farms(request: Request, params: Params) -> Response:
    """Farms, one query per chain merged: globally by `sort` when set, else chain by chain in
    the order named (each by TVL). Merged pages carry no prev_cursor."""
    snapshot = request.state.snapshot
    named: list[ChainRef] | None = params["chains"]
    chain_ids = (farm_chains(snapshot) if named is None
                 else tuple(dict.fromkeys(c.chain_id for c in named)))
    factories = params["factories"]
    query = FarmQuery(chain_ids, params["q"] or None,
                      None if factories is None else tuple(normalize(f, None, "factories")
                                                           for f in factories),
                      params["sort"], params["order"] == "desc")
    listing = Listing("farms", lambda s: farm_list(table(s, "farms"), query), farm_scope(query),
                      backward=not query.merged)
    return await page(request, listing, params["limit"], params["cursor"])


async def get_farm(request: Request, params: Params) -> Response:
    """One farm of a contract: the pool `pid` (default its lowest). 404 when the address is not
    a farm indexed on that chain; a farm with nothing staked is a farm."""
    snapshot = request.state.snapshot
    chain: ChainRef = params["chain"]
    rows = (table(snapshot, "farms")
            .filter(pl.col("chain_id") == chain.chain_id, pl.col("address") == params["address"])
            .sort("pid"))
    if rows.is_empty():
        raise ApiError("not_found", f"{params['address']} is not a farm indexed on {chain.slug}",
                       "address")
    pid = params["pid"] if params["pid"] is not None else rows["pid"][0]
    row = rows.filter(pl.col("pid") == pid)
    if row.is_empty():
        raise ApiError("not_found", f"the farm has no pool {pid}; its pools are "
                       f"{', '.join(map(str, rows['pid'].to_list()))}", "pid")
    return Response(row["item"][0].encode(), headers=snapshot_headers(snapshot))


HANDLERS = {("GET", "/farms"): list_farms, ("GET", "/chains/{chain}/farms/{address}"): get_farm}
