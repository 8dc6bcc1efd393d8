"""The operation registry: each operation's method, path, cost and parameters, declared once."""

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from edge.http import Request, Response
from edge.problems import ApiError

KEYLESS_MAX_LIMIT = 50


@dataclass(frozen=True)
class Param:
    """A query parameter: type, bounds and default, as the spec gives them."""

    name: str
    kind: str = "int"
    default: object = None
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None

    def parse(self, values: list[str] | None) -> object:
        """The parameter's value, or ApiError naming it."""
        if not values:
            return self.default
        raw = values[-1]
        if self.kind == "int":
            try:
                value = int(raw)
            except ValueError:
                raise ApiError("invalid_param", f"{self.name} must be an integer",
                               self.name) from None
            if (self.minimum is not None and value < self.minimum) or (
                    self.maximum is not None and value > self.maximum):
                raise ApiError("invalid_param",
                               f"{self.name} must be {self.minimum}..{self.maximum}", self.name)
            return value
        if self.max_length is not None and len(raw) > self.max_length:
            raise ApiError("invalid_param",
                           f"{self.name} must be at most {self.max_length} characters", self.name)
        return raw


Handler = Callable[[Request, dict], Awaitable[Response]]


@dataclass(frozen=True)
class Operation:
    """One operation of the interface."""

    method: str
    path: str
    cost_cu: int
    summary: str
    params: tuple[Param, ...] = ()
    handler: Handler | None = None

    @property
    def pattern(self) -> re.Pattern:
        """The path as a regex with named groups for `{name}` segments."""
        return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path) + "$")

    def parse(self, request: Request) -> dict:
        """Every declared parameter, validated."""
        return {p.name: p.parse(request.query.get(p.name)) for p in self.params}


LIMIT = Param("limit", "int", 10, 1, 100)
CURSOR = Param("cursor", "string", None, max_length=512)


class Router:
    """Finds the mounted operation for a method and path."""

    def __init__(self, operations: list[Operation]) -> None:
        self.static = {(op.method, op.path): op for op in operations
                       if op.handler and "{" not in op.path}
        self.dynamic = [(op, op.pattern) for op in operations if op.handler and "{" in op.path]

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
