"""create_app(): the edge as a plain ASGI application."""

import asyncio
import contextlib
import importlib.metadata
import logging
from dataclasses import dataclass

import orjson

from edge.addresses import resolve
from edge.admission import Admission, Gate, PaymentRequired
from edge.catalog import OPERATIONS
from edge.http import Request, Response
from edge.keys import open_keys
from edge.llms import llms_txt
from edge.metering import open_meter
from edge.openapi import openapi_yaml
from edge.payments import Cashier, Ledger, PaymentInvalid, encode_header
from edge.plans import KEYLESS, units
from edge.problems import PROBLEM_JSON, ApiError, problem_body
from edge.registry import HERMES_PREFIX, Operation, Router, mount
from edge.routes import chains, platform
from edge.settings import Settings
from edge.snapshots import SnapshotHolder
from publish.cursor import CursorSigner, default_signer
from publish.snapshot import Snapshot
from publish.store import ObjectStore, open_store

API_PREFIX = "/api/v1"
FORMER_PREFIX = "/api/v3"
MOVED_ON = "@1790467200"  # 2026-09-27T00:00:00Z, when /api/v1 took over from /api/v3
log = logging.getLogger("chaintape.edge")


def operations() -> list[Operation]:
    """Every declared operation, with a handler where its product is built."""
    return mount(OPERATIONS, {**chains.HANDLERS, **platform.HANDLERS})


@dataclass
class State:
    """What handlers share: the edge, the request's snapshot and the caller's admission."""

    edge: "Edge"
    snapshot: Snapshot | None
    admission: Admission

    @property
    def holder(self) -> SnapshotHolder:
        return self.edge.holder

    @property
    def signer(self) -> CursorSigner:
        return self.edge.signer


class Edge:
    """Routes requests to their operation through the gate, and answers failures as problems."""

    def __init__(self, store: ObjectStore, signer: CursorSigner, settings: Settings) -> None:
        self.settings = settings
        self.holder = SnapshotHolder(store, settings.upstream_timeout_s)
        self.signer = signer
        self.router = Router(operations())
        self.cashier = Cashier(settings.offer, Ledger(settings.home / "x402-ledger.sqlite"),
                               settings.upstream_timeout_s)
        self.meter = open_meter(settings.redis_url)
        self.keys = open_keys(settings.redis_url, settings.home)
        self.gate = Gate(self.keys, self.meter, self.cashier, settings.trusted_proxies)
        self.documents = {
            "/openapi.yml": Response(openapi_yaml(self.router.operations, _version()), 200,
                                     b"application/yaml"),
            "/llms.txt": Response(llms_txt(self.router.operations, API_PREFIX), 200,
                                  b"text/plain; charset=utf-8"),
        }
        self._follower: asyncio.Task | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await asyncio.to_thread(self.holder.refresh)
                self._follower = asyncio.create_task(self.holder.follow(self.settings.poll_s))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._follower:
                    self._follower.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._follower
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope, receive, send) -> None:
        request = Request.from_scope(scope)
        hermes = request.path.startswith(HERMES_PREFIX)
        try:
            request.body = await _body(receive)
            response = await self._dispatch(request)
        except ApiError as err:
            response = _problem(err, request.request_id, hermes)
        except PaymentRequired as err:
            response = Response(orjson.dumps(err.document), 402, headers=err.headers)
        except Exception:
            log.exception("request %s failed", request.request_id)
            err = ApiError("internal", f"unexpected error; quote request id {request.request_id}")
            response = _problem(err, request.request_id, hermes)
        headers = [(b"content-type", response.content_type),
                   (b"x-request-id", request.request_id.encode()), *response.headers]
        if request.path.startswith(FORMER_PREFIX + "/"):
            successor = API_PREFIX + request.path[len(FORMER_PREFIX):]
            headers += [(b"deprecation", MOVED_ON.encode()),
                        (b"link", f'<{successor}>; rel="successor-version"'.encode())]
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": response.body})

    async def _dispatch(self, request: Request) -> Response:
        document = self.documents.get(request.path.removeprefix(API_PREFIX))
        if document is not None and request.method == "GET":
            return document
        operation, path_params = self._route(request)
        request.path_params = path_params
        if not operation.metered:
            params = operation.parse(request)
            state = State(self, self._snapshot(), Admission(KEYLESS, ""))
            request.state = state
            return await operation.handler(request, resolve(state.snapshot, params))
        admission = await self.gate.identify(request, operation)
        params = operation.parse(request)
        needs_data = operation.domain != "platform"
        snapshot = self._snapshot() if needs_data else self.holder.current
        if needs_data:
            params = resolve(snapshot, params)
        if operation.limit_max is not None:
            params["limit"] = min(params["limit"], admission.plan.ceiling(operation.limit_max))
        await self.gate.spend(request, operation, admission, request.url)
        state = State(self, snapshot, admission)
        request.state = state
        try:
            response = await operation.handler(request, params)
        except BaseException:
            if admission.payment is not None:
                self.cashier.ledger.release(admission.payment)
            raise
        return await self._finish(request, response, operation, admission)

    async def _finish(self, request: Request, response: Response, operation: Operation,
                      admission: Admission) -> Response:
        if admission.verdict is not None:
            response.headers += admission.verdict.headers()
        payment = admission.payment
        if payment is None:
            return response
        if not 200 <= response.status < 300:
            self.cashier.ledger.release(payment)
            return response
        try:
            receipt = await self.cashier.settle(payment)
        except PaymentInvalid as err:
            raise self.gate.challenge(operation, units(operation.cost_cu), request.url,
                                      str(err)) from None
        response.headers.append((payment.response_header(), encode_header(receipt)))
        return response

    def _route(self, request: Request) -> tuple[Operation, dict[str, str]]:
        path = request.path
        for prefix in (API_PREFIX, FORMER_PREFIX):
            if path.startswith(prefix + "/"):
                found = self.router.match(request.method, path[len(prefix):])
                if found is not None and not found[0].hermes:
                    return found
                break
        else:
            found = self.router.match(request.method, path)
            if found is not None and found[0].hermes:
                return found
        raise ApiError("not_found", f"{request.method} {path} is not an operation")

    def _snapshot(self) -> Snapshot:
        snapshot = self.holder.current
        if snapshot is None:
            raise ApiError("upstream_unavailable", "no snapshot has been published yet; retry")
        return snapshot


def _version() -> str:
    try:
        return importlib.metadata.version("chaintape")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def _body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _problem(err: ApiError, request_id: str, hermes: bool) -> Response:
    if hermes:
        return Response(f"{err.detail}\n".encode(), err.status, b"text/plain; charset=utf-8",
                        list(err.headers))
    return Response(problem_body(err, request_id), err.status, PROBLEM_JSON, list(err.headers))


def create_app(store: ObjectStore | None = None, signer: CursorSigner | None = None,
               settings: Settings | None = None) -> Edge:
    """The edge over `store` (default: $CHAINTAPE_STORE or ./var/store)."""
    return Edge(store or open_store(), signer or default_signer(), settings or Settings.from_env())
