"""The little HTTP vocabulary of the edge: requests, responses and query parsing."""

import itertools
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import orjson

REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
Headers = list[tuple[str, str]]


class Request:
    """What a handler sees: method, path and its parameters, query, headers and body.

    `headers` is any mapping with lower-case names and `.get`; the query is parsed on first use.
    """

    __slots__ = ("_client", "_query", "body", "headers", "method", "path", "path_params",
                 "raw_query", "request_id", "scheme", "state")

    def __init__(self, method: str, path: str, raw_query: str, headers: Any,
                 client: str | None = None, scheme: str = "http") -> None:
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
        self._query: dict[str, list[str]] | None = None

    @classmethod
    def from_asgi(cls, scope: dict) -> "Request":
        """The request an ASGI scope describes."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        client = scope.get("client")
        host = None if not client else f"[{client[0]}]" if ":" in client[0] else client[0]
        return cls(scope["method"], scope["path"], scope.get("query_string", b"").decode("latin-1"),
                   headers, host and f"{host}:{client[1]}", scope.get("scheme", "http"))

    @classmethod
    def from_rsgi(cls, scope) -> "Request":
        """The request an RSGI scope describes (granian's native interface)."""
        return cls(scope.method, scope.path, scope.query_string, scope.headers, scope.client,
                   scope.scheme)

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

