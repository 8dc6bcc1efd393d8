"""The edge's request pipeline as small layers, each one concern, composed by `create_app()`.

A layer is called with the request and the next layer (`Next`) and returns the response. A
layer with nothing to do to a request hands back the next layer's awaitable itself rather than
awaiting it: the pipeline then costs one coroutine per layer that works on the answer, not one
per layer."""

from collections.abc import Awaitable, Callable

from edge.web.http import Request, Response

Next = Callable[[Request], Awaitable[Response]]
