"""Operations and the router that finds them; handlers are bound to declared operations."""

import functools
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from edge.web.http import Request, Response
from edge.web.params import Body, Param

# A handler reads its parameters and never changes them: they are shared by every call of the
# same URL within a snapshot.
# An operation's validated parameters by name.
Params = dict[str, Any]
Handler = Callable[[Request, Params], Awaitable[Response]]
HERMES_PREFIX = "/v2/"
API_PREFIX = "/api/v1"
# Where the client API was served before 2026-09-27; it still answers, marked deprecated.
FORMER_PREFIX = "/api/v3"
# The oracle's own versioned routes are served at the root of the base URL, not under the API.
ROOT_PREFIXES = ("/v1/", HERMES_PREFIX)


@dataclass(frozen=True)
class Operation:
    """One operation of the interface: what the catalog declares plus, once built, its handler."""

    method: str
    path: str
    cost_cu: int
    summary: str
    params: tuple[Param, ...] = ()
    domain: str = ""
    body: Body | None = None
    handler: Handler | None = None

    @property
    def operation_id(self) -> str:
        """A stable name: the method and path in words."""
        words = re.sub(r"[{}.\-/]+", "_", self.path).strip("_")
        return f"{self.method.lower()}_{words}"

    @functools.cached_property
    def hermes(self) -> bool:
        """An oracle route of the Hermes convention: root-mounted, keyless, free, text errors."""
        return self.path.startswith(HERMES_PREFIX)

    @functools.cached_property
    def root(self) -> bool:
        """Served at the root of the base URL (the oracle's /v1 and /v2), not under /api/v1."""
        return self.path.startswith(ROOT_PREFIXES)

    @functools.cached_property
    def metered(self) -> bool:
        """Whether calls spend the client's budget."""
        return not self.hermes

    @property
    def pattern(self) -> re.Pattern[str]:
        """The path as a regex with named groups for `{name}` segments."""
        return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path) + "$")

    @functools.cached_property
    def limit_max(self) -> int | None:
        """The declared maximum of the operation's page size, if it has one."""
        for param in self.params:
            if param.name == "limit":
                return int(param.maximum) if param.maximum is not None else None
        return None

    def parse(self, query: dict[str, list[str]], path_params: dict[str, str]) -> dict[str, Any]:
        """Every declared query and path parameter, validated."""
        out = {}
        for param in self.params:
            if param.location == "path":
                out[param.name] = param.parse([path_params[param.name]])
            else:
                out[param.name] = param.parse(query.get(param.name))
        return out


def mount(operations: list[Operation], handlers: dict[tuple[str, str], Handler]) -> list[Operation]:
    """The declared operations with their handlers; an undeclared handler is a programming error."""
    declared = {(op.method, op.path) for op in operations}
    unknown = set(handlers) - declared
    if unknown:
        raise ValueError(f"handlers for undeclared operations: {sorted(unknown)}")
    return [replace(op, handler=handlers.get((op.method, op.path))) for op in operations]


class Router:
    """Finds the mounted operation for a method and path."""

    def __init__(self, operations: list[Operation]) -> None:
        mounted = [op for op in operations if op.handler is not None]
        self.operations = mounted
        self.static = {(op.method, op.path): op for op in mounted if "{" not in op.path}
        self.dynamic = [(op, op.pattern) for op in mounted if "{" in op.path]

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation and its path parameters, or None."""
        op = self.static.get((method, path))
        if op is not None:
            return op, {}
        for op, pattern in self.dynamic:
            found = pattern.match(path)
            if found and op.method == method:
                return op, found.groupdict()
        return None
