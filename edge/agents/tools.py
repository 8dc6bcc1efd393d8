"""The agent-tool server: every operation of the catalog as an MCP tool, answered by the same
layers as the HTTP call it stands for (keys, budget, metering, validation, problems).

A tool's name is the operation's id, its description the catalog's summary and cost, its input
schema the operation's parameters (a POST's body fields are arguments beside them). The streams
are not tools: an agent polls the list they follow (docs/agents.md).
"""

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import mcp_types as types
import orjson
from mcp.server.lowlevel import Server

from edge.schemas import STREAMS
from edge.web.layers.request_ids import request_id_for
from edge.web.params import Param
from edge.web.problems import CODES, PROBLEM_JSON, ApiError, problem_document
from edge.web.registry import API_PREFIX, Operation

# Headers of the MCP request that the call it stands for carries: the key, x402 payment and
# the proxy's client address, each counted exactly as on the HTTP interface.
FORWARDED = ("x-api-key", "authorization", "accept-payment", "payment-signature", "x-payment",
             "x-forwarded-for", "host", "x-request-id")
# The code of an oracle route's text error (Hermes answers text), by its status.
STATUS_CODES = {CODES[code][0]: code for code in (
    "invalid_param", "not_found", "rate_limited", "internal", "upstream_unavailable",
    "upstream_timeout")}


@dataclass(frozen=True)
class Answer:
    """What the edge answered an operation's call: status, headers (lower-case) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class Call:
    """An operation's call as HTTP: method, path under the base URL, query and JSON body."""

    method: str
    path: str
    query: str
    body: bytes | None


# Sends a call with the MCP request's forwarded headers and client address.
Caller = Callable[[Call, Mapping[str, str], str | None], Awaitable[Answer]]


class ToolError(Exception):
    """Arguments the call cannot even be made from: a tool error with the problem's code."""

    def __init__(self, detail: str, param: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.param = param


def tool_operations(operations: list[Operation]) -> list[Operation]:
    """The operations offered as tools: every mounted one but the event streams."""
    return [op for op in operations if (op.method, op.path) not in STREAMS]


def tool(op: Operation) -> types.Tool:
    """The MCP tool of an operation."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in op.params:
        properties[param.name] = param.schema()
        if param.description:
            properties[param.name]["description"] = param.description
        if param.required:
            required.append(param.name)
    if op.body is not None:
        properties.update(op.body.schema.get("properties", {}))
        required += op.body.schema.get("required", [])
    cost = "Free" if op.cost_cu == 0 else f"Costs {op.cost_cu} CU"
    where = op.path if op.root else API_PREFIX + op.path
    inputs: dict[str, Any] = {"type": "object", "properties": properties,
                              "additionalProperties": False}
    if required:
        inputs["required"] = required
    return types.Tool(name=op.operation_id, title=op.summary, input_schema=inputs,
                      description=f"{op.summary}. {cost} a call, as {op.method} {where}.",
                      annotations=types.ToolAnnotations(
                          title=op.summary, read_only_hint=True, destructive_hint=False,
                          idempotent_hint=True, open_world_hint=False))


def call_of(op: Operation, arguments: Mapping[str, Any]) -> Call:
    """The HTTP call a tool call stands for; arguments it cannot carry raise ToolError."""
    declared = {param.name: param for param in op.params}
    fields = set(op.body.schema.get("properties", {})) if op.body is not None else set()
    for name in arguments:
        if name not in declared and name not in fields:
            raise ToolError(f"{name} is not a parameter of {op.operation_id}", name)
    path = op.path
    query: list[tuple[str, str]] = []
    for name, param in declared.items():
        if name not in arguments or arguments[name] is None:
            continue
        values = _values(param, arguments[name])
        if param.location == "path":
            if "/" in values[0]:
                raise ToolError(f"{name} must not contain '/'", name)
            path = path.replace("{" + name + "}", quote(values[0], safe=""))
        elif param.kind == "list":
            query.append((name, ",".join(values)))
        else:
            query.extend((name, value) for value in values)
    body = None
    if op.body is not None:
        body = orjson.dumps({name: arguments[name] for name in fields if name in arguments})
    return Call(op.method, path if op.root else API_PREFIX + path, urlencode(query), body)


def _values(param: Param, value: Any) -> list[str]:
    """An argument as the query's text values: one, or several for a list."""
    many = param.kind in ("list", "repeat")
    if isinstance(value, list) and many:
        items = value
    elif isinstance(value, (list, dict)):
        raise ToolError(f"{param.name} takes {'a list of ' if many else ''}plain values", param.name)
    else:
        items = [value]
    out = []
    for item in items:
        if isinstance(item, (list, dict)):
            raise ToolError(f"{param.name} takes plain values", param.name)
        out.append(("true" if item else "false") if isinstance(item, bool) else str(item))
    return out


def result_of(answer: Answer, request_id: str) -> types.CallToolResult:
    """The tool's result: the operation's JSON answer, or a tool error carrying the whole
    problem document (the edge's own, or one made of an oracle route's text error, under the
    request's id) and, when the budget is spent, when to retry."""
    kind = answer.headers.get("content-type", "")
    if answer.status < 400:
        value = orjson.loads(answer.body) if answer.body else None
        return types.CallToolResult(
            content=[types.TextContent(text=answer.body.decode())],
            structured_content=value if isinstance(value, dict) else {"items": value})
    if kind.startswith(PROBLEM_JSON):
        problem = orjson.loads(answer.body)
    elif kind.startswith("application/json"):
        # The x402 offer: a spent keyless budget for a client that pays.
        problem = {**problem_document(ApiError("rate_limited", "payment required (x402)",
                                               http_status=answer.status), request_id),
                   "offer": orjson.loads(answer.body)}
    else:
        problem = problem_document(ApiError(
            STATUS_CODES.get(answer.status, "internal"),
            answer.body.decode(errors="replace").strip(), http_status=answer.status),
            request_id)
    retry = answer.headers.get("retry-after")
    if retry is not None and retry.isdigit():
        problem["retry_after_seconds"] = int(retry)
    return _error(problem)


def _error(problem: dict[str, Any]) -> types.CallToolResult:
    text = f"{problem['code']}: {problem['detail']}"
    if "retry_after_seconds" in problem:
        text += f" (retry after {problem['retry_after_seconds']} s)"
    return types.CallToolResult(content=[types.TextContent(text=text + "\n" + json.dumps(problem))],
                                structured_content=problem, is_error=True)


def agent_server(operations: list[Operation], caller: Caller, version: str) -> Server[Any]:
    """The MCP server whose tools are `operations`, each call sent by `caller`."""
    offered = {op.operation_id: op for op in tool_operations(operations)}
    listed = types.ListToolsResult(tools=[tool(op) for op in offered.values()])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        request = getattr(ctx, "request", None)
        headers: dict[str, str] = {}
        client = None
        if request is not None:
            headers = {name: request.headers[name] for name in FORWARDED if name in request.headers}
            client = f"{request.client.host}:{request.client.port}" if request.client else None
        # The MCP request's own id (the edge gave it one): the call it stands for carries it.
        request_id = headers.setdefault("x-request-id", request_id_for(None))
        op = offered.get(params.name)
        if op is None:
            return _error(problem_document(
                ApiError("not_found", f"no tool named {params.name}"), request_id))
        try:
            call = call_of(op, params.arguments or {})
        except ToolError as err:
            return _error(problem_document(
                ApiError("invalid_param", err.detail, err.param), request_id))
        return result_of(await caller(call, headers, client), request_id)

    return Server("chaintape", version=version, title="chaintape market data",
                  instructions="On-chain market data: tokens, pairs, trades, wallets, boards, "
                               "farms, perps, chains and oracle prices. Lists page with cursor.",
                  on_list_tools=list_tools, on_call_tool=call_tool)
