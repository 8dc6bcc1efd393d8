"""The innermost layer: the operation's handler, with the parameters the layers above made."""

from edge.http import Request, Response


async def dispatch(request: Request) -> Response:
    """The handler's answer."""
    response: Response = await request.prepared.operation.handler(request, request.params)
    return response
