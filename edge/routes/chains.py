"""GET /chains and GET /config, straight from the snapshot."""

from edge.http import Request, Response
from edge.paging import page
from edge.registry import CURSOR, LIMIT, Operation


async def list_chains(request: Request, params: dict) -> Response:
    """Chain records, paged."""
    state = request.state
    return page(state.holder, state.signer, "chains", params["limit"], params["cursor"],
                state.snapshot)


async def get_config(request: Request, params: dict) -> Response:
    """Every chain record and the value lists a valid request may use."""
    snapshot = request.state.snapshot
    return Response(snapshot.documents["config"],
                    headers=[(b"x-snapshot-id", snapshot.snapshot_id.encode())])


OPERATIONS = [
    Operation("GET", "/chains", 10, "Chain records, paged", (LIMIT, CURSOR), list_chains),
    Operation("GET", "/config", 10, "Chains and the values a valid request may use", (),
              get_config),
]
