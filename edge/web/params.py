"""Parameter kinds of the interface: each parses its raw text and says its OpenAPI schema."""

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from edge.web.problems import ApiError

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT32 = (0, 2**32 - 1)
TRUE, FALSE = frozenset({"true", "1"}), frozenset({"false", "0"})


@dataclass(frozen=True)
class Param:
    """A query or path parameter: its kind, bounds, default and whether it is required."""

    name: str
    kind: str = "string"
    description: str = ""
    default: object = None
    required: bool = False
    location: str = "query"
    minimum: float | None = None
    maximum: float | None = None
    min_length: int = 0
    max_length: int | None = None
    values: tuple[str, ...] = ()
    pattern: str | None = None
    max_items: int = 32
    min_items: int = 1
    fmt: str = ""

    def parse(self, values: list[str] | None) -> object:
        """The parameter's value from its raw occurrences, or ApiError naming it."""
        if self.kind == "repeat":
            items = values or []
            if len(items) > self.max_items:
                raise self.error(f"takes at most {self.max_items} items")
            return [self._scalar(item) for item in items]
        if not values:
            if self.required:
                raise self.error("is required")
            return list(self.default) if isinstance(self.default, tuple) else self.default
        if len(values) > 1:
            raise self.error("was given more than once; send it once")
        raw = values[0]
        if self.kind == "list":
            items = [item.strip() for item in raw.split(",")]
            if any(not item for item in items):
                raise self.error("has an empty item")
            if not self.min_items <= len(items) <= self.max_items:
                raise self.error(f"takes {self.min_items}..{self.max_items} items")
            return [self._scalar(item) for item in items]
        return self._scalar(raw)

    def _scalar(self, raw: str) -> object:
        if self.kind == "int":
            if not re.fullmatch(r"-?\d{1,20}", raw):
                raise self.error("must be an integer")
            return self._bounded(int(raw))
        if self.kind == "number":
            try:
                value = float(raw)
            except ValueError:
                raise self.error("must be a number") from None
            if value != value or value in (float("inf"), float("-inf")):
                raise self.error("must be a finite number")
            return self._bounded(value)
        if self.kind == "bool":
            lowered = raw.lower()
            if lowered not in TRUE | FALSE:
                raise self.error("must be true or false")
            return lowered in TRUE
        if self.values and raw not in self.values:
            raise self.error("must be one of " + ", ".join(self.values))
        if not self.min_length <= len(raw) or (self.max_length is not None
                                               and len(raw) > self.max_length):
            raise self.error(f"must be {self.min_length}..{self.max_length} characters")
        if self.pattern and not re.fullmatch(self.pattern, raw):
            raise self.error(f"must match {self.pattern}")
        return raw

    def _bounded(self, value: float) -> float:
        if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum):
            raise self.error(f"must be {_bound(self.minimum)}..{_bound(self.maximum)}")
        return value

    def error(self, what: str) -> ApiError:
        """The 400 naming this parameter."""
        return ApiError("invalid_param", f"{self.name} {what}", self.name)

    def schema(self) -> dict[str, Any]:
        """The parameter's JSON Schema, as /openapi.yml gives it."""
        if self.kind in ("list", "repeat"):
            item = {k: v for k, v in self._item_schema().items() if k != "default"}
            out: dict[str, Any] = {"type": "array", "items": item, "minItems": self.min_items,
                         "maxItems": self.max_items}
            if self.default is not None:
                out["default"] = list(self.default)  # type: ignore[call-overload]
            return out
        return self._item_schema()

    def _item_schema(self) -> dict[str, Any]:
        kind = {"int": "integer", "number": "number", "bool": "boolean"}.get(self.kind, "string")
        out: dict[str, Any] = {"type": kind}
        if self.fmt:
            out["format"] = self.fmt
        if self.values:
            out["enum"] = list(self.values)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if kind == "string" and not self.values:
            out["minLength"] = max(self.min_length, 1 if self.location == "path" else 0)
            if self.max_length is not None:
                out["maxLength"] = self.max_length
            if self.pattern:
                out["pattern"] = f"^{self.pattern}$"
        if self.default is not None:
            out["default"] = self.default
        return out


def _bound(value: float | None) -> str:
    # Whole bounds in full: a client is told 0..4294967295, not 0..4.29497e+09.
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def integer(name: str, low_high: tuple[int, int], default: int | None = None, **kw: Any) -> Param:
    """An integer parameter with the given (min, max)."""
    fmt = "int32" if INT32[0] <= low_high[0] and low_high[1] <= INT32[1] else "int64"
    return Param(name, "int", default=default, minimum=low_high[0], maximum=low_high[1], fmt=fmt,
                 **kw)


def number(name: str, minimum: float | None = 0, maximum: float | None = None, **kw: Any) -> Param:
    """A floating-point parameter with inclusive bounds."""
    return Param(name, "number", minimum=minimum, maximum=maximum, fmt="double", **kw)


def flag(name: str, default: bool = False, **kw: Any) -> Param:
    """A boolean parameter: true/false or 1/0."""
    return Param(name, "bool", default=default, **kw)


def choice(name: str, values: tuple[str, ...], default: str | None = None, **kw: Any) -> Param:
    """One value of a closed set."""
    return Param(name, "string", default=default, values=values, **kw)


def text(name: str, max_length: int, min_length: int = 0, **kw: Any) -> Param:
    """A string with length bounds."""
    return Param(name, "string", min_length=min_length, max_length=max_length, **kw)


def listing(name: str, max_items: int = 32, values: tuple[str, ...] = (), **kw: Any) -> Param:
    """A comma-separated list, at most `max_items` items."""
    return Param(name, "list", values=values, max_items=max_items, **kw)


def path(name: str, max_length: int = 128, **kw: Any) -> Param:
    """A path segment, 1..`max_length` characters."""
    return Param(name, "string", location="path", required=True, min_length=1,
                 max_length=max_length, **kw)


@dataclass(frozen=True)
class Body:
    """A POST body: its JSON Schema, declared with the operation and enforced on every call."""

    schema: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def parse(self, raw: bytes) -> object:
        """The body's JSON once it follows the schema; 400 naming the offending place."""
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError("invalid_param", "the body must be JSON", "body") from None
        _conform(value, self.schema, "body")
        return value


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _conform(value: object, schema: dict[str, Any], where: str) -> None:
    """Check `value` against the JSON Schema subset bodies are declared with."""
    kind = schema.get("type")
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = kind is None or isinstance(value, _TYPES[kind])
    if not ok:
        raise ApiError("invalid_param", f"{where} must be a JSON {kind}", where)
    if isinstance(value, dict):
        for name in schema.get("required", ()):
            if name not in value:
                raise ApiError("invalid_param", f"{where}.{name} is required", f"{where}.{name}")
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                raise ApiError("invalid_param", f"{where} has no field {extra[0]!r}",
                               f"{where}.{extra[0]}")
        for name, sub in properties.items():
            if name in value:
                _conform(value[name], sub, f"{where}.{name}")
    elif isinstance(value, list):
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        if len(value) < low or (high is not None and len(value) > high):
            raise ApiError("invalid_param", f"{where} takes {low}..{high} items", where)
        for i, item in enumerate(value):
            _conform(item, schema.get("items", {}), f"{where}[{i}]")
    elif isinstance(value, str):
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if len(value) < low or (high is not None and len(value) > high):
            raise ApiError("invalid_param", f"{where} must be {low}..{high} characters", where)
