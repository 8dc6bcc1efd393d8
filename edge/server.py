"""The edge on the wire: granian's native RSGI (the default) and plain ASGI, with one
lifecycle, answering through the composed layers."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from edge.agents.endpoint import AgentEndpoint
from edge.routes.oracle import websocket_session
from edge.services import Services
from edge.web.http import Receive, Request, Scope, Send
from edge.web.layers import Next

WEBSOCKET_PATH = "/ws"
# A stream write that takes longer than this means the client stopped reading: drop it.
SEND_TIMEOUT_S = 10.0
log = logging.getLogger("chaintape.edge")


class Server:
    """An RSGI and ASGI application over the layers `handle` and the shared `services`, the
    agent-tool transport (at /mcp, among the layers; started by its first call) stopped with
    them."""

    def __init__(self, services: Services, handle: Next, agents: AgentEndpoint) -> None:
        self.services = services
        self.handle = handle
        self.agents = agents

    async def start(self) -> None:
        """Start the shared services."""
        await self.services.start()

    async def stop(self) -> None:
        """Stop what start started."""
        await self.agents.stop()
        await self.services.stop()

    # RSGI: granian calls init before its loop runs and del after it stopped.
    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.run_until_complete(self.start())

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.run_until_complete(self.stop())

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto == "ws":
            await self._rsgi_websocket(scope, protocol)
            return
        if scope.proto != "http":
            return
        request = Request.from_rsgi(scope, protocol)
        response = await self.handle(request)
        headers = [("content-type", response.content_type),
                   ("x-request-id", request.request_id), *response.headers]
        if response.stream is None:
            protocol.response_bytes(response.status, headers, response.body)
            return
        transport = protocol.response_stream(response.status, headers)
        await _pump(response.stream, transport.send_bytes, protocol.client_disconnect())

    async def _rsgi_websocket(self, scope: Any, protocol: Any) -> None:
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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            await self._asgi_websocket(scope, receive, send)
        elif scope["type"] == "http":
            request = Request.from_asgi(scope, receive)
            response = await self.handle(request)
            headers = [("content-type", response.content_type),
                       ("x-request-id", request.request_id), *response.headers]
            await send({"type": "http.response.start", "status": response.status, "headers": [
                (name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]})
            if response.stream is None:
                await send({"type": "http.response.body", "body": response.body})
                return

            async def chunk(data: bytes) -> None:
                await send({"type": "http.response.body", "body": data, "more_body": True})

            await _pump(response.stream, chunk, _asgi_disconnect(receive))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _asgi_websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
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

    async def _websocket(self, incoming: Callable[[], Awaitable[str | None]],
                         outgoing: Callable[[str], Awaitable[None]]) -> None:
        holder = self.services.holder
        session = websocket_session(self.services.oracle, lambda: holder.current, outgoing)
        await session.run(incoming)


async def _pump(stream: AsyncIterator[bytes], write: Callable[[bytes], Awaitable[None]],
                disconnected: Awaitable[None]) -> None:
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
        await stream.aclose()  # type: ignore[attr-defined]


async def _asgi_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
