"""The little HTTP vocabulary of the edge: requests, responses and query parsing."""

import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import orjson

REQUEST_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class Request:
    """What a handler sees: method, path parameters, query and headers."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    request_id: str
    peer: str | None = None
    scheme: str = "http"
    raw_query: str = ""
    body: bytes = b""
    path_params: dict[str, str] = field(default_factory=dict)
    state: Any = None

    @classmethod
    def from_scope(cls, scope: dict) -> "Request":
        """The request an ASGI scope describes."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw_query = scope.get("query_string", b"").decode("latin-1")
        query = parse_qs(raw_query, keep_blank_values=True)
        client = scope.get("client")
        return cls(scope["method"], scope["path"], query, headers, request_id_for(headers),
                   client[0] if client else None, scope.get("scheme", "http"), raw_query)

    @property
    def url(self) -> str:
        """The URL the client asked for (an x402 payment names it as its resource)."""
        base = f"{self.scheme}://{self.headers.get('host', 'localhost')}{self.path}"
        return base + (f"?{self.raw_query}" if self.raw_query else "")


@dataclass
class Response:
    """Status, body and headers; the content type defaults to JSON."""

    body: bytes
    status: int = 200
    content_type: bytes = b"application/json"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)

    @classmethod
    def json(cls, value: object, status: int = 200) -> "Response":
        return cls(orjson.dumps(value), status)


def request_id_for(headers: dict[str, str]) -> str:
    """The client's X-Request-Id when it follows the rule, else a fresh one."""
    given = headers.get("x-request-id", "")
    return given if REQUEST_ID.match(given) else secrets.token_hex(12)
