"""create_app(): the edge as an ASGI application that granian can also serve natively (RSGI)."""

import asyncio
import contextlib
import importlib.metadata
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import orjson

from edge.addresses import resolve
from edge.admission import Admission, Gate, PaymentRequired, key_in_query
from edge.catalog import OPERATIONS
from edge.http import Headers, Request, Response
from edge.keys import open_keys
from edge.llms import llms_txt
from edge.memo import Kept
from edge.metering import open_meter
from edge.notary import Notary
from edge.openapi import openapi_yaml
from edge.oracle.live import LiveOracle
from edge.payments import Cashier, Ledger, Payment, PaymentInvalid, encode_header
from edge.plans import KEYLESS, units
from edge.problems import PROBLEM_JSON, ApiError, problem_body
from edge.registry import HERMES_PREFIX, Operation, Router, mount
from edge.routes import (
    boards,
    chains,
    farms,
    lists,
    market,
    oracle,
    perps,
    platform,
    search,
    tokens,
    trades,
    verdicts,
    wallets,
)
from edge.settings import Settings
from edge.snapshots import SnapshotHolder
from publish.cursor import CursorSigner, default_signer
from publish.home import secret
from publish.snapshot import Snapshot
from publish.store import ObjectStore, open_store

API_PREFIX = "/api/v1"
FORMER_PREFIX = "/api/v3"
MOVED_ON = "@1790467200"  # 2026-09-27T00:00:00Z, when /api/v1 took over from /api/v3
BODILESS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
WEBSOCKET_PATH = "/ws"
# A stream write that takes longer than this means the client stopped reading: drop it.
SEND_TIMEOUT_S = 10.0
log = logging.getLogger("chaintape.edge")


def operations() -> list[Operation]:
    """Every declared operation, with a handler where its product is built."""
    return mount(OPERATIONS, {**boards.HANDLERS, **chains.HANDLERS, **farms.HANDLERS,
                              **lists.HANDLERS, **market.HANDLERS, **oracle.HANDLERS,
                              **perps.HANDLERS,
                                   **platform.HANDLERS, **search.HANDLERS,
                                   **tokens.HANDLERS, **trades.HANDLERS,
                                   **verdicts.HANDLERS, **wallets.HANDLERS})


@dataclass(slots=True)
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

    @property
    def notary(self) -> Notary:
        return self.edge.notary


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a method, path and query string mean against one snapshot: the operation, its
    validated parameters (or the first error) and any query parameter that looks like a key."""

    operation: Operation
    path_params: dict[str, str]
    key_name: str | None
    params: dict | None
    error: ApiError | None


# Clients repeat the same URLs, and what a URL means only changes with the snapshot, so its
# parsing and validation are kept until the snapshot changes (bounded against random queries).
PREPARED_KEPT = 4096


class Edge:
    """Routes requests to their operation through the gate, and answers failures as problems.

    Served through ASGI (`__call__`) or granian's native RSGI (`__rsgi__`), which is faster.
    """

    def __init__(self, store: ObjectStore, signer: CursorSigner, settings: Settings) -> None:
        self.settings = settings
        self.holder = SnapshotHolder(store, settings.upstream_timeout_s)
        self.signer = signer
        self.notary = Notary(secret("CHAINTAPE_VERDICT_KEY", settings.home / "verdict.key"))
        self.router = Router(operations())
        self.cashier = Cashier(settings.offer, Ledger(settings.home / "x402-ledger.sqlite"),
                               settings.upstream_timeout_s)
        self.meter = open_meter(settings.redis_url)
        self.keys = open_keys(settings.redis_url, settings.home)
        self.gate = Gate(self.keys, self.meter, self.cashier, settings.trusted_proxies)
        self.oracle = LiveOracle(settings.oracle_upstream)
        documents = {
            "/openapi.yml": Response(openapi_yaml(self.router.operations, _version()), 200,
                                     "application/yaml"),
            "/llms.txt": Response(llms_txt(self.router.operations, API_PREFIX), 200,
                                  "text/plain; charset=utf-8"),
        }
        self.documents = {prefix + name: document for name, document in documents.items()
                          for prefix in ("", API_PREFIX)}
        self._prepared = Kept(PREPARED_KEPT)
        self._prepared_for: str | None = None
        self._follower: asyncio.Task | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            await self._asgi_websocket(scope, receive, send)
        elif scope["type"] == "http":
            request = Request.from_asgi(scope)
            if request.method not in BODILESS:
                request.body = await _body(receive)
            status, headers, response = await self.respond(request)
            await send({"type": "http.response.start", "status": status, "headers": [
                (name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]})
            if response.stream is None:
                await send({"type": "http.response.body", "body": response.body})
                return

            async def chunk(data: bytes) -> None:
                await send({"type": "http.response.body", "body": data, "more_body": True})

            await _pump(response.stream, chunk, _asgi_disconnect(receive))

    async def _asgi_websocket(self, scope, receive, send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        if scope["path"] != WEBSOCKET_PATH:
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "websocket.accept"})

        async def incoming() -> str | None:
            message = await receive()
            if message["type"] != "websocket.receive":
                return None
            return message.get("text") or (message.get("bytes") or b"").decode()

        async def outgoing(text: str) -> None:
            await send({"type": "websocket.send", "text": text})

        await self._websocket(incoming, outgoing)

    async def _websocket(self, incoming, outgoing) -> None:
        session = oracle.websocket_session(self, lambda: self.holder.current, outgoing)
        await session.run(incoming)

    def __rsgi_init__(self, loop) -> None:
        self.holder.refresh()
        self._follower = loop.create_task(self.holder.follow(self.settings.poll_s))

    def __rsgi_del__(self, loop) -> None:
        if self._follower:
            self._follower.cancel()

    async def __rsgi__(self, scope, protocol) -> None:
        if scope.proto == "ws":
            await self._rsgi_websocket(scope, protocol)
            return
        if scope.proto != "http":
            return
        request = Request.from_rsgi(scope)
        if request.method not in BODILESS:
            request.body = await protocol()
        status, headers, response = await self.respond(request)
        if response.stream is None:
            protocol.response_bytes(status, headers, response.body)
            return
        transport = protocol.response_stream(status, headers)
        await _pump(response.stream, transport.send_bytes, protocol.client_disconnect())

    async def _rsgi_websocket(self, scope, protocol) -> None:
        if scope.path != WEBSOCKET_PATH:
            protocol.close(1008)
            return
        transport = await protocol.accept()

        async def incoming() -> str | None:
            message = await transport.receive()
            if message.kind == 0:
                return None
            return message.data if isinstance(message.data, str) else message.data.decode()

        try:
            await self._websocket(incoming, transport.send_str)
        except Exception:
            log.debug("websocket closed", exc_info=True)
        protocol.close(1000)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await asyncio.to_thread(self.holder.refresh)
                self._follower = asyncio.create_task(self.holder.follow(self.settings.poll_s))
                self.oracle.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._follower:
                    self._follower.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._follower
                await self.oracle.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def respond(self, request: Request) -> tuple[int, Headers, Response]:
        """Status, headers and response to `request` (its body, or its stream); failures become
        problems."""
        hermes = request.path.startswith(HERMES_PREFIX)
        try:
            response = await self._dispatch(request)
        except ApiError as err:
            response = _problem(err, request, hermes)
        except PaymentRequired as err:
            response = Response(orjson.dumps(err.document), 402, headers=err.headers)
        except Exception:
            log.exception("request %s failed", request.request_id)
            err = ApiError("internal", f"unexpected error; quote request id {request.request_id}")
            response = _problem(err, request, hermes)
        headers = [("content-type", response.content_type),
                   ("x-request-id", request.request_id), *response.headers]
        if request.path.startswith(FORMER_PREFIX + "/"):
            successor = API_PREFIX + request.path[len(FORMER_PREFIX):]
            headers += [("deprecation", MOVED_ON), ("link", f'<{successor}>; rel="successor-version"')]
        return response.status, headers, response

    async def _dispatch(self, request: Request) -> Response:
        document = self.documents.get(request.path)
        if document is not None and request.method == "GET":
            return document
        snapshot = self.holder.current
        prepared = self._prepare(request, snapshot)
        operation = prepared.operation
        request.path_params = prepared.path_params
        if not operation.metered:
            if prepared.error is not None:
                raise prepared.error
            request.state = State(self, snapshot, Admission(KEYLESS, ""))
            return await operation.handler(request, prepared.params)
        admission = await self.gate.identify(request, operation, prepared.key_name)
        if prepared.error is not None:
            raise prepared.error
        params = prepared.params
        if operation.body is not None:
            params = {**params, "body": operation.body.parse(request.body)}
        if operation.limit_max is not None:
            ceiling = admission.plan.ceiling(operation.limit_max)
            if params["limit"] > ceiling:
                params = {**params, "limit": ceiling}
        await self.gate.spend(request, operation, admission)
        request.state = State(self, snapshot, admission)
        try:
            response = await operation.handler(request, params)
        except BaseException:
            if admission.payment is not None:
                self.cashier.ledger.release(admission.payment)
            raise
        if admission.verdict is not None:
            response.headers += admission.verdict.headers()
        if admission.payment is None:
            return response
        return await self._settle(request, response, operation, admission.payment)

    def _prepare(self, request: Request, snapshot: Snapshot | None) -> Prepared:
        sid = None if snapshot is None else snapshot.snapshot_id
        if sid != self._prepared_for:
            self._prepared.clear()
            self._prepared_for = sid
        url = (request.method, request.path, request.raw_query)
        prepared = self._prepared.get(url)
        if prepared is not None:
            return prepared
        operation, path_params = self._route(request)
        key_name = key_in_query(request.query)
        try:
            params = operation.parse(request.query, path_params)
            if operation.domain != "platform":
                if snapshot is None:
                    raise ApiError("upstream_unavailable",
                                   "no snapshot has been published yet; retry")
                params = resolve(snapshot, params)
        except ApiError as err:
            return Prepared(operation, path_params, key_name, None, err)
        return self._prepared.keep(url, Prepared(operation, path_params, key_name, params, None))

    async def _settle(self, request: Request, response: Response, operation: Operation,
                      payment: Payment) -> Response:
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
                if found is not None and not found[0].root:
                    return found
                break
        else:
            found = self.router.match(request.method, path)
            if found is not None and found[0].root:
                return found
        raise ApiError("not_found", f"{request.method} {path} is not an operation")


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


async def _pump(stream: AsyncIterator[bytes], write: Callable[[bytes], Awaitable[None]],
                disconnected: Awaitable) -> None:
    """Write the stream's chunks until it ends, the client leaves or stops reading."""
    async def drain() -> None:
        async for chunk in stream:
            async with asyncio.timeout(SEND_TIMEOUT_S):
                await write(chunk)

    writer, watcher = asyncio.ensure_future(drain()), asyncio.ensure_future(disconnected)
    try:
        await asyncio.wait({writer, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (writer, watcher):
            task.cancel()
        for task in (writer, watcher):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await stream.aclose()


async def _asgi_disconnect(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _hermes_text(err: ApiError, path_params: dict[str, str]) -> str:
    """Hermes' wording: what could not be parsed (the URL's path or its query), or the detail
    as it stands."""
    if err.code != "invalid_param":
        return err.detail
    where = "Invalid URL" if err.param in path_params else "Failed to deserialize query string"
    return f"{where}: {err.detail}"


def _problem(err: ApiError, request: Request, hermes: bool) -> Response:
    if hermes:
        return Response(_hermes_text(err, request.path_params).encode(), err.status,
                        "text/plain; charset=utf-8", list(err.headers))
    return Response(problem_body(err, request.request_id), err.status, PROBLEM_JSON,
                    list(err.headers))


def create_app(store: ObjectStore | None = None, signer: CursorSigner | None = None,
               settings: Settings | None = None) -> Edge:
    """The edge over `store` (default: $CHAINTAPE_STORE or ./var/store)."""
    return Edge(store or open_store(), signer or default_signer(), settings or Settings.from_env())
