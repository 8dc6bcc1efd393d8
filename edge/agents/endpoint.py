"""/mcp on the edge's own port: the agent-tool server over Streamable HTTP (stateless, JSON
answers), each tool call sent through the edge's layers as the HTTP call it stands for. /mcp
itself comes through the outer layers like every route: its answer carries `X-Request-Id`, a
body over the bound is refused with a problem document before it is read, and a failure is a
problem document."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

import orjson

from edge.web.http import Request, Response
from edge.web.layers import Next
from edge.web.registry import Operation

# The MCP library (about a second to import) loads with the first call to /mcp, not with every
# edge worker that starts.
if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from edge.agents.tools import Call, Caller

PATH = "/mcp"
# Stateless, the server sends nothing of its own accord: the protocol's answer to a GET (an
# event stream it would hold open for ever) or a DELETE (there is no session) is 405.
REFUSED = Response(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": -32000, "message": "Method not allowed: /mcp answers POST (stateless, JSON)"}}), 405,
    headers=[("allow", "POST")])
# JSON-RPC's codes for a body that is not JSON, and for JSON that is not a request.
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
# An error message of the transport's longer than this is cut to its first line: a message
# that does not validate is answered briefly, not with the validator's whole report.
MESSAGE_CHARS = 300


async def _one(body: bytes) -> AsyncIterator[bytes]:
    yield body


def in_process(handle: Next) -> "Caller":
    """A caller answering through `handle`, the edge's composed layers."""
    from edge.agents.tools import Answer

    async def call(made: "Call", headers: Mapping[str, str], client: str | None) -> Answer:
        request = Request(made.method, made.path, made.query, dict(headers), client, "http",
                          _one if made.body is not None else None, made.body)
        response = await handle(request)
        return Answer(response.status, {"content-type": response.content_type,
                                        **{k.lower(): v for k, v in response.headers}},
                      response.body)
    return call


def rpc_error(code: int, message: str, status: int = 400) -> Response:
    """A JSON-RPC error answer with no request id (the request could not be read)."""
    return Response(orjson.dumps({"jsonrpc": "2.0", "id": None,
                                  "error": {"code": code, "message": message}}), status)


def refusal(body: bytes) -> Response | None:
    """The answer to a body that is not JSON-RPC (None when it is): short, as JSON-RPC says."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return rpc_error(PARSE_ERROR, "Parse error: the body is not JSON")
    items = message if isinstance(message, list) else [message]
    if not items or not all(
            isinstance(m, dict) and m.get("jsonrpc") == "2.0"
            and (isinstance(m.get("method"), str) or "result" in m or "error" in m)
            and isinstance(m.get("params", {}), dict) for m in items):
        return rpc_error(INVALID_REQUEST, 'Invalid Request: a JSON-RPC 2.0 message is expected '
                         '({"jsonrpc": "2.0", "method": ..., "params": {...}, "id": ...})')
    return None


def _brief(body: bytes) -> bytes:
    """The transport's answer, its error message cut to its first line when it is long."""
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or len(str(error.get("message", ""))) <= MESSAGE_CHARS:
        return body
    first = str(error["message"]).splitlines()[0][:MESSAGE_CHARS]
    return orjson.dumps({**answer, "error": {**error, "message": first}})


class AgentEndpoint:
    """The Streamable HTTP transport of the agent-tool server, started and stopped with the edge."""

    def __init__(self, operations: list[Operation], handle: Next, version: str) -> None:
        self.operations, self.handle, self.version = operations, handle, version
        self._manager: StreamableHTTPSessionManager | None = None
        self._starting = asyncio.Lock()
        self._stop = asyncio.Event()
        self._running: asyncio.Task[None] | None = None

    async def manager(self) -> "StreamableHTTPSessionManager":
        """The transport, made and its task group run (in a task of its own, exited where
        entered) at the first call."""
        if self._manager is not None:
            return self._manager
        async with self._starting:
            if self._manager is None:
                from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

                from edge.agents.tools import agent_server

                server = agent_server(self.operations, in_process(self.handle), self.version)
                # Stateless with JSON answers: no session is held between calls, so nothing
                # grows with the number of agents, and any edge behind a balancer answers any
                # call.
                manager = StreamableHTTPSessionManager(server, json_response=True,
                                                       stateless=True)
                started = asyncio.Event()

                async def run() -> None:
                    async with manager.run():
                        started.set()
                        await self._stop.wait()

                self._running = asyncio.ensure_future(run())
                await started.wait()
                self._manager = manager
            return self._manager

    async def stop(self) -> None:
        """End the transport."""
        self._stop.set()
        if self._running is not None:
            with contextlib.suppress(Exception):
                await self._running

    async def answer(self, request: Request) -> Response:
        """Answer one request to /mcp, its body already read (within the bound): through the
        transport, the request's id in its headers for the tool calls to carry."""
        if request.method != "POST":
            return REFUSED
        refused = refusal(request.body)
        if refused is not None:
            return refused
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                   for k, v in request.headers.items() if k.lower() != "x-request-id"]
        headers.append((b"x-request-id", request.request_id.encode()))
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": request.scheme, "path": request.path,
            "raw_path": request.path.encode(), "query_string": request.raw_query.encode(),
            "root_path": "", "server": None, "headers": headers,
            "client": None if request.peer is None else (request.peer, 0)}
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": request.body, "more_body": False}
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        start: dict[str, Any] = {}
        body = bytearray()

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                body.extend(message.get("body", b""))

        await (await self.manager()).handle_request(scope, receive, send)
        answered = [(k.decode("latin-1").lower(), v.decode("latin-1"))
                    for k, v in start.get("headers", [])]
        kind = next((v for k, v in answered if k == "content-type"), "application/json")
        return Response(_brief(bytes(body)), int(start.get("status", 500)), kind,
                        [(k, v) for k, v in answered
                         if k not in ("content-type", "content-length", "x-request-id")])


class AgentRoute:
    """Sends /mcp to the agent endpoint and every other path on."""

    def __init__(self, endpoint: AgentEndpoint, inner: Next) -> None:
        self.endpoint = endpoint
        self.inner = inner

    def __call__(self, request: Request) -> Awaitable[Response]:
        if request.path == PATH:
            return self.endpoint.answer(request)
        return self.inner(request)
