"""`chaintape mcp`: the agent-tool server over stdio for desktop agents, answering from a
configured edge over HTTP, or from the local snapshot through an edge built in this process."""

import contextlib
from collections.abc import AsyncIterator, Mapping

import httpx
from mcp.server.stdio import stdio_server

from edge.agents.endpoint import in_process
from edge.agents.tools import Answer, Call, Caller, agent_server
from edge.app import create_app, operations, version
from edge.web.registry import Router


@contextlib.asynccontextmanager
async def remote(base_url: str) -> AsyncIterator[Caller]:
    """A caller sending each call to the edge at `base_url`."""
    async with httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=60) as client:
        async def call(made: Call, forwarded: Mapping[str, str], peer: str | None) -> Answer:
            try:
                response = await client.request(
                    made.method, made.path, params=httpx.QueryParams(made.query),
                    content=made.body, headers={**forwarded, **(
                        {"content-type": "application/json"} if made.body is not None else {})})
            except httpx.TransportError as err:
                return Answer(503, {"content-type": "text/plain"},
                              f"the edge at {base_url} did not answer: {err}".encode())
            return Answer(response.status_code, dict(response.headers), response.content)
        yield call


@contextlib.asynccontextmanager
async def local() -> AsyncIterator[Caller]:
    """A caller answering from the local snapshot ($CHAINTAPE_STORE or the home's store)."""
    app = create_app()
    await app.services.start()
    try:
        yield in_process(app.handle)
    finally:
        await app.services.stop()


async def serve_stdio(edge_url: str | None, key: str | None) -> None:
    """Serve the tools on stdin/stdout until the agent closes them; every call carries `key`
    when one is given."""
    mounted = Router(operations()).operations
    keyed = {"x-api-key": key} if key else {}
    async with remote(edge_url) if edge_url else local() as caller, \
            stdio_server() as (read, write):
        async def call(made: Call, forwarded: Mapping[str, str], peer: str | None) -> Answer:
            return await caller(made, {**forwarded, **keyed}, peer)

        server = agent_server(mounted, call, version())
        await server.run(read, write, server.create_initialization_options())
