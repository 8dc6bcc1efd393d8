"""The edge's request pipeline as small layers, each one concern, composed by `create_app()`.

A layer is called with the request and the next layer (`Next`) and returns the response."""

from collections.abc import Awaitable, Callable

from edge.http import Request, Response

Next = Callable[[Request], Awaitable[Response]]
