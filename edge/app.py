"""create_app(): the edge as a plain ASGI application."""

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass

from edge.http import Request, Response
from edge.problems import PROBLEM_JSON, ApiError, problem_body
from edge.registry import Operation, Router
from edge.routes import chains
from edge.snapshots import SnapshotHolder
from publish.cursor import CursorSigner, default_signer
from publish.snapshot import Snapshot
from publish.store import ObjectStore, open_store

API_PREFIX = "/api/v1"
log = logging.getLogger("chaintape.edge")


def operations() -> list[Operation]:
    """Every operation the edge declares."""
    return [*chains.OPERATIONS]


@dataclass
class State:
    """What handlers share: the snapshot holder, the cursor signer, the request's snapshot."""

    holder: SnapshotHolder
    signer: CursorSigner
    snapshot: Snapshot | None = None


class Edge:
    """Routes /api/v1 requests to their operation and answers failures as problem documents."""

    def __init__(self, store: ObjectStore, signer: CursorSigner, poll_s: float) -> None:
        self.holder = SnapshotHolder(store)
        self.signer = signer
        self.poll_s = poll_s
        self.router = Router(operations())
        self._follower: asyncio.Task | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await asyncio.to_thread(self.holder.refresh)
                self._follower = asyncio.create_task(self.holder.follow(self.poll_s))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._follower:
                    self._follower.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._follower
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope, send) -> None:
        request = Request.from_scope(scope)
        try:
            response = await self._dispatch(request)
        except ApiError as err:
            response = Response(problem_body(err, request.request_id), err.status, PROBLEM_JSON)
        except Exception:
            log.exception("request %s failed", request.request_id)
            err = ApiError("internal", f"unexpected error; quote request id {request.request_id}")
            response = Response(problem_body(err, request.request_id), 500, PROBLEM_JSON)
        headers = [(b"content-type", response.content_type),
                   (b"x-request-id", request.request_id.encode()), *response.headers]
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": response.body})

    async def _dispatch(self, request: Request) -> Response:
        path = request.path
        if not path.startswith(API_PREFIX + "/"):
            raise ApiError("not_found", f"no operation at {path}")
        found = self.router.match(request.method, path[len(API_PREFIX):])
        if found is None:
            raise ApiError("not_found", f"{request.method} {path} is not an operation")
        operation, path_params = found
        snapshot = self.holder.current
        if snapshot is None:
            raise ApiError("upstream_unavailable", "no snapshot has been published yet; retry")
        request.path_params = path_params
        request.state = State(self.holder, self.signer, snapshot)
        assert operation.handler is not None
        return await operation.handler(request, operation.parse(request))


def create_app(store: ObjectStore | None = None, signer: CursorSigner | None = None,
               poll_s: float | None = None) -> Edge:
    """The edge over `store` (default: $CHAINTAPE_STORE or ./var/store)."""
    poll = poll_s if poll_s is not None else float(os.environ.get("CHAINTAPE_POLL_SECONDS", "2"))
    return Edge(store or open_store(), signer or default_signer(), poll)
