"""Every answer names its request: the client's X-Request-Id when it follows the rule, else a
fresh one (spec 7)."""

from edge.http import Request, Response
from edge.layers import Next


class RequestIds:
    """Adds X-Request-Id to every response, problems and refusals included."""

    def __init__(self, inner: Next) -> None:
        self.inner = inner

    async def __call__(self, request: Request) -> Response:
        response = await self.inner(request)
        response.headers.append(("x-request-id", request.request_id))
        return response
