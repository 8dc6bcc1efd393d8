"""The former prefix /api/v3 still answers, with RFC 9745 Deprecation and a successor link."""

from collections.abc import Awaitable

from edge.web.http import Request, Response
from edge.web.layers import Next
from edge.web.registry import API_PREFIX, FORMER_PREFIX

MOVED_ON = "@1790467200"  # 2026-09-27T00:00:00Z, when /api/v1 took over from /api/v3


class Deprecation:
    """Marks answers to /api/v3 paths as deprecated, naming the /api/v1 successor."""

    def __init__(self, inner: Next) -> None:
        self.inner = inner

    def __call__(self, request: Request) -> Awaitable[Response]:
        if request.path.startswith(FORMER_PREFIX + "/"):
            return self._deprecated(request)
        return self.inner(request)

    async def _deprecated(self, request: Request) -> Response:
        response = await self.inner(request)
        successor = API_PREFIX + request.path[len(FORMER_PREFIX):]
        response.headers += [("deprecation", MOVED_ON),
                             ("link", f'<{successor}>; rel="successor-version"')]
        return response
