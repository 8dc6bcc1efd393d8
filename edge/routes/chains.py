"""GET /chains and GET /config, straight from the snapshot."""

from edge.http import Request, Response
from edge.paging import page, table_listing
from edge.snapshots import snapshot_headers

CHAINS = table_listing("chains")


async def list_chains(request: Request, params: dict) -> Response:
    """Chain records, paged."""
    return await page(request, CHAINS, params["limit"], params["cursor"])


async def get_config(request: Request, params: dict) -> Response:
    """Every chain record and the value lists a valid request may use."""
    snapshot = request.state.snapshot
    return Response(snapshot.documents["config"], headers=snapshot_headers(snapshot))


HANDLERS = {("GET", "/chains"): list_chains, ("GET", "/config"): get_config}
