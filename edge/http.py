"""The little HTTP vocabulary of the edge: requests, responses and query parsing."""

import itertools
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import orjson

REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
Headers = list[tuple[str, str]]
BODILESS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})


async def _no_body() -> AsyncIterator[bytes]:
    return
    yield b""


class Request:
    """What a handler sees: method, path and its parameters, query, headers and body.

    `headers` is any mapping with lower-case names and `.get`; the query is parsed on first use.
    The layers fill in `body`, `prepared` (the operation and its parameters) and `state`.
    """

    __slots__ = ("_chunks", "_client", "_items", "_query", "body", "headers", "method",
                 "params", "path", "path_params", "prepared", "raw_query", "request_id",
                 "scheme", "state")

    def __init__(self, method: str, path: str, raw_query: str, headers: Any,
                 client: str | None = None, scheme: str = "http",
                 items: Callable[[], list[tuple[str, str | None]]] | None = None,
                 chunks: Callable[[], AsyncIterator[bytes]] = _no_body) -> None:
        self.method = method
        self.path = path
        self.raw_query = raw_query
        self.headers = headers
        self._client = client
        self.scheme = scheme
        self.request_id = request_id_for(headers.get("x-request-id"))
        self.body = b""
        self.path_params: dict[str, str] = {}
        self.state: Any = None
        self.prepared: Any = None
        self.params: Any = None
        self._query: dict[str, list[str]] | None = None
        self._items = items or (lambda: list(headers.items()))
        self._chunks = chunks

    @classmethod
    def from_asgi(cls, scope: dict[str, Any], receive: Callable[..., Any] | None = None) -> "Request":
        """The request an ASGI scope describes; its body comes from `receive`."""
        items = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        client = scope.get("client")
        host = None if not client else f"[{client[0]}]" if ":" in client[0] else client[0]

        async def chunks() -> AsyncIterator[bytes]:
            while receive is not None:
                message = await receive()
                yield message.get("body", b"")
                if not message.get("more_body"):
                    return

        return cls(scope["method"], scope["path"], scope.get("query_string", b"").decode("latin-1"),
                   dict(items), f"{host}:{client[1]}" if host and client else None,
                   scope.get("scheme", "http"),
                   lambda: items, chunks)

    @classmethod
    def from_rsgi(cls, scope: Any, protocol: Any = None) -> "Request":
        """The request an RSGI scope describes (granian's native interface); its body comes
        from `protocol`."""
        headers = scope.headers

        async def chunks() -> AsyncIterator[bytes]:
            # Only `async for` over the protocol itself reads the body (granian refuses a
            # separate call of its __aiter__).
            async for chunk in protocol:
                yield chunk

        return cls(scope.method, scope.path, scope.query_string, headers, scope.client,
                   scope.scheme, headers.items, _no_body if protocol is None else chunks)

    def header_items(self) -> list[tuple[str, str | None]]:
        """Every header field as sent (a value the server could not read as text is None)."""
        return self._items()

    def body_chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, read once."""
        return self._chunks()

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


# Fresh ids are this process's random prefix and a counter: unique without a syscall each.
_PREFIX = os.urandom(8).hex()
_counter = itertools.count(1)


def request_id_for(given: str | None) -> str:
    """The client's X-Request-Id when it follows the rule, else a fresh one."""
    if given and REQUEST_ID.fullmatch(given):
        return given
    return f"{_PREFIX}{next(_counter):08x}"

