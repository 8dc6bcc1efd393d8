"""The chains: GET /chains and GET /config straight from the snapshot, and which chains a list
covers (the live ones, or those asked for) and which are stale."""

import orjson

from edge.addresses import ChainRef
from edge.memo import per_snapshot
from edge.paging import page, table_listing
from edge.snapshots import snapshot_headers, table
from edge.web.http import Request, Response
from edge.web.registry import Params
from publish.reader import Snapshot

CHAINS = table_listing("chains")


@per_snapshot(kept=8)
def chain_states(snapshot: Snapshot) -> tuple[tuple[int, ...], dict[int, str]]:
    """The live chains (still syncing) and the chains whose figures are stale, by id."""
    live, stale = [], {}
    for item in map(orjson.loads, table(snapshot, "chains")["item"].to_list()):
        if item["syncing"]:
            live.append(item["chain_id"])
        if item["metrics_stale"]:
            stale[item["chain_id"]] = item["slug"]
    return tuple(sorted(live)), stale


def asked_chains(params: Params) -> tuple[int, ...] | None:
    """The chain ids asked for, in a canonical order, or None when the list was not narrowed."""
    chains: list[ChainRef] | None = params.get("chains")
    return None if chains is None else tuple(sorted({c.chain_id for c in chains}))


def in_scope(snapshot: Snapshot, asked: tuple[int, ...] | None) -> tuple[int, ...]:
    """The chains a list covers: those asked for, else every live chain."""
    return asked if asked is not None else chain_states(snapshot)[0]


async def list_chains(request: Request, params: Params) -> Response:
    """Chain records, paged."""
    return await page(request, CHAINS, params["limit"], params["cursor"])


async def get_config(request: Request, params: Params) -> Response:
    """Every chain record and the value lists a valid request may use."""
    snapshot = request.state.snapshot
    return Response(snapshot.documents["config"], headers=snapshot_headers(snapshot))


HANDLERS = {("GET", "/chains"): list_chains, ("GET", "/config"): get_config}
