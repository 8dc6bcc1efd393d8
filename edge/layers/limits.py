"""What the edge reads of a request at most, refused before the body is read."""

from collections.abc import AsyncIterator

from edge.http import BODILESS, Request, Response
from edge.layers import Next
from edge.problems import ApiError

# The largest body an operation takes is a labels batch of 200 addresses (~30 KiB).
MAX_BODY_BYTES = 64 * 1024
# Hermes' latest-prices route takes up to 500 ids in the query (~37 KiB).
MAX_URL_BYTES = 48 * 1024  # below the HTTP parser's own 64 KiB, which answers with no body
MAX_HEADERS = 64
MAX_HEADER_BYTES = 16 * 1024


class Limits:
    """Refuses an over-long URL (414), too many or too large headers (431) and a body over
    its limit (413) as problems, and reads the body of the requests that have one."""

    def __init__(self, inner: Next) -> None:
        self.inner = inner

    async def __call__(self, request: Request) -> Response:
        refused = refusal(request.path, request.raw_query, request.header_items())
        if refused is not None:
            raise refused
        if request.method not in BODILESS:
            request.body = await bounded_body(request.body_chunks())
        return await self.inner(request)


def too_large(status: int, part: str, detail: str) -> ApiError:
    """The refusal of a request whose `part` (url, headers, body) is over its limit."""
    return ApiError("invalid_param", detail, part, http_status=status)


def refusal(path: str, raw_query: str,
            header_items: list[tuple[str, str | None]]) -> ApiError | None:
    """Why the request's head is refused (its URL, its headers or its declared body size), or
    None; decided before a byte of the body is read, so `Expect: 100-continue` is answered with
    the refusal instead of 100 Continue."""
    if len(path) + len(raw_query) > MAX_URL_BYTES:
        return too_large(414, "url", f"the URL is over {MAX_URL_BYTES} bytes")
    if len(header_items) > MAX_HEADERS:
        return too_large(431, "headers", f"more than {MAX_HEADERS} header fields")
    declared = None
    size = 0
    for name, value in header_items:
        size += len(name) + len(value or "")
        if name == "content-length":
            declared = value or ""
    if size > MAX_HEADER_BYTES:
        return too_large(431, "headers", f"the header fields are over {MAX_HEADER_BYTES} bytes")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
        return too_large(413, "body", f"the body must be at most {MAX_BODY_BYTES} bytes")
    return None


async def bounded_body(chunks: AsyncIterator[bytes]) -> bytes:
    """The body's bytes; 413 as soon as they pass MAX_BODY_BYTES (a chunked body declares no
    length up front)."""
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise too_large(413, "body", f"the body must be at most {MAX_BODY_BYTES} bytes")
    return bytes(body)
