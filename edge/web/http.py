"""The little HTTP vocabulary of the edge: requests, responses and query parsing."""

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import orjson

Headers = list[tuple[str, str]]
# ASGI's own types.
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
BODILESS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})


async def _no_body() -> AsyncIterator[bytes]:
    return
    yield b""


async def _rsgi_body(protocol: Any) -> AsyncIterator[bytes]:
    # Only `async for` over the protocol itself reads the body (granian refuses a separate call
    # of its __aiter__).
    async for chunk in protocol:
        yield chunk


async def _asgi_body(receive: Callable[[], Any]) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        yield message.get("body", b"")
        if not message.get("more_body"):
            return


class Request:
    """What a handler sees: method, path and its parameters, query, headers and body.

    `headers` is any mapping with lower-case names and `.get`; the query is parsed on first use.
    The layers fill in `body`, `prepared` (the operation and its parameters) and `state`.
    """

    __slots__ = ("_client", "_query", "_source", "body", "headers", "method", "params", "path",
                 "path_params", "prepared", "raw_query", "request_id", "scheme", "state")

    def __init__(self, method: str, path: str, raw_query: str, headers: Any,
                 client: str | None = None, scheme: str = "http",
                 source: Callable[[Any], AsyncIterator[bytes]] | None = None,
                 carrier: Any = None) -> None:
        self.method = method
        self.path = path
        self.raw_query = raw_query
        self.headers = headers
        self._client = client
        self.scheme = scheme
        self.request_id = ""
        self.body = b""
        self.path_params: dict[str, str] = {}
        self.state: Any = None
        self.prepared: Any = None
        self.params: Any = None
        self._query: dict[str, list[str]] | None = None
        # What reads the body, and what it reads it from: kept apart so that a request that
        # never reads its body makes no closure.
        self._source = (source, carrier)

    @classmethod
    def from_asgi(cls, scope: dict[str, Any], receive: Callable[..., Any] | None = None) -> "Request":
        """The request an ASGI scope describes; its body comes from `receive`."""
        items = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        client = scope.get("client")
        host = None if not client else f"[{client[0]}]" if ":" in client[0] else client[0]

        return cls(scope["method"], scope["path"], scope.get("query_string", b"").decode("latin-1"),
                   dict(items), f"{host}:{client[1]}" if host and client else None,
                   scope.get("scheme", "http"), _asgi_body, receive)

    @classmethod
    def from_rsgi(cls, scope: Any, protocol: Any = None) -> "Request":
        """The request an RSGI scope describes (granian's native interface); its body comes
        from `protocol`."""
        return cls(scope.method, scope.path, scope.query_string, scope.headers, scope.client,
                   scope.scheme, _rsgi_body, protocol)

    def body_chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, read once."""
        source, carrier = self._source
        return _no_body() if source is None or carrier is None else source(carrier)

    @property
    def peer(self) -> str | None:
        """The socket peer's address, without its port."""
        client = self._client
        if not client:
            return None
        host = client.rpartition(":")[0] if client.count(":") == 1 or client[0] == "[" \
            else client
        return host.strip("[]")

    @property
    def query(self) -> dict[str, list[str]]:
        """Every query parameter with all its occurrences."""
        if self._query is None:
            self._query = parse_qs(self.raw_query, keep_blank_values=True)
        return self._query

    @property
    def url(self) -> str:
        """The URL the client asked for (an x402 payment names it as its resource)."""
        base = f"{self.scheme}://{self.headers.get('host') or 'localhost'}{self.path}"
        return base + (f"?{self.raw_query}" if self.raw_query else "")


@dataclass
class Response:
    """Status, body and headers; the content type defaults to JSON. A streamed response sends
    the chunks of `stream` after its (empty) body until the client leaves."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: Headers = field(default_factory=list)
    stream: AsyncIterator[bytes] | None = None

    @classmethod
    def json(cls, value: object, status: int = 200) -> "Response":
        return cls(orjson.dumps(value), status)
