"""GET /chains and GET /config, straight from the snapshot."""

from edge.http import Request, Response
from edge.paging import page


async def list_chains(request: Request, params: dict) -> Response:
    """Chain records, paged."""
    state = request.state
    return await page(state.holder, state.signer, "chains", params["limit"], params["cursor"],
                      state.snapshot)


async def get_config(request: Request, params: dict) -> Response:
    """Every chain record and the value lists a valid request may use."""
    snapshot = request.state.snapshot
    return Response(snapshot.documents["config"],
                    headers=[("x-snapshot-id", snapshot.snapshot_id)])


HANDLERS = {("GET", "/chains"): list_chains, ("GET", "/config"): get_config}
