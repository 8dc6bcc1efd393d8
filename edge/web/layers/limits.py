"""What the edge reads of a request body at most, refused before the body is read."""

from collections.abc import AsyncIterator, Awaitable

from edge.web.http import BODILESS, Request, Response
from edge.web.layers import Next
from edge.web.problems import ApiError

# The largest body an operation takes is a labels batch of 200 addresses (~30 KiB).
MAX_BODY_BYTES = 64 * 1024


class Limits:
    """Refuses a body over its limit (413) as a problem before a byte of it is read, so that
    `Expect: 100-continue` is answered with the refusal instead of 100 Continue, and reads the
    body of the requests that have one."""

    def __init__(self, inner: Next) -> None:
        self.inner = inner

    def __call__(self, request: Request) -> Awaitable[Response]:
        if request.method in BODILESS:
            return self.inner(request)
        return self._with_body(request)

    async def _with_body(self, request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            raise too_large()
        request.body = await bounded_body(request.body_chunks())
        return await self.inner(request)


def too_large() -> ApiError:
    """The refusal of a body over its limit: HTTP's own 413, which clients and proxies act on,
    under the closed code of what failed (invalid_param, `body`)."""
    return ApiError("invalid_param", f"the body must be at most {MAX_BODY_BYTES} bytes", "body",
                    http_status=413)


async def bounded_body(chunks: AsyncIterator[bytes]) -> bytes:
    """The body's bytes; 413 as soon as they pass MAX_BODY_BYTES (a chunked body declares no
    length up front)."""
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise too_large()
    return bytes(body)
