"""Every answer names its request: the client's X-Request-Id when it follows the rule (letters,
digits, `-` and `_`, at most 64), else a fresh one (spec 7)."""

import itertools
import os
import re
from collections.abc import Awaitable

from edge.web.http import Request, Response
from edge.web.layers import Next

REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Fresh ids are this process's random prefix and a counter: unique without a syscall each.
_PREFIX = os.urandom(8).hex()
_counter = itertools.count(1)


class RequestIds:
    """Gives the request its id, which problems quote and every answer's X-Request-Id carries
    (the server writes it on the answer's head, so no layer can drop it)."""

    def __init__(self, inner: Next) -> None:
        self.inner = inner

    def __call__(self, request: Request) -> Awaitable[Response]:
        request.request_id = request_id_for(request.headers.get("x-request-id"))
        return self.inner(request)


def request_id_for(given: str | None) -> str:
    """The client's X-Request-Id when it follows the rule, else a fresh one."""
    if given and REQUEST_ID.fullmatch(given):
        return given
    return f"{_PREFIX}{next(_counter):08x}"
