"""The innermost layer: the operation's handler, with the parameters the layers above made."""

from collections.abc import Awaitable

from edge.web.http import Request, Response
from edge.web.registry import Handler


def dispatch(request: Request) -> Awaitable[Response]:
    """The handler's answer."""
    handler: Handler = request.prepared.operation.handler
    return handler(request, request.params)
