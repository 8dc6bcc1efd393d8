"""/mcp on the edge's own port: the agent-tool server over Streamable HTTP (stateless, JSON
answers), each tool call sent through the edge's layers as the HTTP call it stands for."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, MutableMapping
from typing import Any

import orjson
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from edge.agent_tools import Answer, Call, Caller, agent_server
from edge.http import Receive, Request, Response, Scope, Send
from edge.layers import Next
from edge.registry import Operation

PATH = "/mcp"
# Stateless, the server sends nothing of its own accord: the protocol's answer to a GET (an
# event stream it would hold open for ever) or a DELETE (there is no session) is 405.
REFUSED = Response(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": -32000, "message": "Method not allowed: /mcp answers POST (stateless, JSON)"}}), 405,
    headers=[("allow", "POST")])


async def _one(body: bytes) -> AsyncIterator[bytes]:
    yield body


def in_process(handle: Next) -> Caller:
    """A caller answering through `handle`, the edge's composed layers."""
    async def call(made: Call, headers: Mapping[str, str], client: str | None) -> Answer:
        request = Request(made.method, made.path, made.query, dict(headers), client, "http",
                          _one if made.body is not None else None, made.body)
        response = await handle(request)
        return Answer(response.status, {"content-type": response.content_type,
                                        **{k.lower(): v for k, v in response.headers}},
                      response.body)
    return call


class AgentEndpoint:
    """The Streamable HTTP transport of the agent-tool server, started and stopped with the edge."""

    def __init__(self, operations: list[Operation], handle: Next, version: str) -> None:
        server = agent_server(operations, in_process(handle), version)
        # Stateless with JSON answers: no session is held between calls, so nothing grows with
        # the number of agents, and any edge behind a balancer answers any call.
        self.manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
        self._stop = asyncio.Event()
        self._running: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Run the transport's task group in a task of its own (it is exited where entered)."""
        started = asyncio.Event()

        async def run() -> None:
            async with self.manager.run():
                started.set()
                await self._stop.wait()

        self._running = asyncio.ensure_future(run())
        await started.wait()

    async def stop(self) -> None:
        """End the transport."""
        self._stop.set()
        if self._running is not None:
            with contextlib.suppress(Exception):
                await self._running

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one ASGI request to /mcp."""
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": REFUSED.status, "headers": [
                (k.encode(), v.encode()) for k, v in (("content-type", REFUSED.content_type),
                                                      *REFUSED.headers)]})
            await send({"type": "http.response.body", "body": REFUSED.body})
            return
        await self.manager.handle_request(scope, receive, send)

    async def rsgi(self, scope: Any, protocol: Any) -> None:
        """Answer one RSGI request to /mcp through the ASGI transport."""
        if scope.method != "POST":
            protocol.response_bytes(REFUSED.status, [("content-type", REFUSED.content_type),
                                                     *REFUSED.headers], REFUSED.body)
            return
        body = await protocol()
        host, _, port = (scope.client or "").rpartition(":")
        asgi_scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": scope.http_version,
            "method": scope.method, "scheme": scope.scheme, "path": scope.path,
            "raw_path": scope.path.encode(), "query_string": scope.query_string.encode(),
            "root_path": "", "server": None,
            "client": (host.strip("[]"), int(port)) if port.isdigit() else None,
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1"))
                        for k, v in scope.headers.items()]}
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await protocol.client_disconnect()
            return {"type": "http.disconnect"}

        start: dict[str, Any] = {}
        stream: Any = None

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal stream
            if message["type"] == "http.response.start":
                start.update(message)
                return
            headers = [(k.decode("latin-1"), v.decode("latin-1"))
                       for k, v in start.get("headers", [])]
            chunk = message.get("body", b"")
            if stream is None and not message.get("more_body"):
                protocol.response_bytes(start["status"], headers, chunk)
                return
            if stream is None:
                stream = protocol.response_stream(start["status"], headers)
            if chunk:
                await stream.send_bytes(chunk)

        await self.asgi(asgi_scope, receive, send)
