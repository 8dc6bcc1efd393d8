"""/openapi.yml: the OpenAPI 3.1 description of every mounted operation, from the registry."""

from typing import Any

import yaml

from edge.schemas import PAYMENT_REQUIRED, PROBLEM, RESPONSES, STREAMS
from edge.web.params import Param
from edge.web.registry import Operation

PROBLEM_STATUSES = {"400": "Invalid parameter or key in query", "401": "Invalid API key",
                    "403": "Plan required", "404": "Not found (chain, record or route)",
                    "429": "Rate limited", "500": "Internal error",
                    "503": "Upstream unavailable", "504": "Upstream timeout"}
PAYMENT_HEADERS = [
    ("Accept-Payment", "Payment methods the client can use, comma-separated; with x402 a spent "
                       "keyless budget answers 402 instead of 429."),
    ("PAYMENT-SIGNATURE", "Base64 x402 v2 payment payload."),
    ("X-PAYMENT", "Base64 x402 v1 payment payload."),
]
RATE_HEADERS = ["RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining"]


def _parameter(param: Param) -> dict[str, Any]:
    out = {"name": param.name, "in": param.location, "required": param.required,
           "schema": param.schema()}
    if param.description:
        out["description"] = param.description
    if param.kind == "list":
        out.update(style="form", explode=False)
    return out


def _operation(op: Operation) -> dict[str, Any]:
    headers: dict[str, dict[str, Any]] = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}
    ok = {"description": "OK", "headers": headers,
          "content": {STREAMS.get((op.method, op.path), "application/json"): {
              "schema": RESPONSES.get((op.method, op.path), {
                  "type": "string" if (op.method, op.path) in STREAMS else "object"})}}}
    if op.metered:
        headers.update({h: {"$ref": f"#/components/headers/{h.replace('-', '')}"}
                              for h in RATE_HEADERS})
    out: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary, "tags": [op.domain],
                 "parameters": [_parameter(p) for p in op.params],
                 "responses": {"200": ok}, "x-chaintape-cost-cu": op.cost_cu}
    if op.metered:
        out["parameters"] += [{"name": name, "in": "header", "required": False,
                               "description": text, "schema": {"type": "string"}}
                              for name, text in PAYMENT_HEADERS]
        out["responses"]["402"] = {"description": "x402 payment required", "content": {
            "application/json": {"schema": PAYMENT_REQUIRED}}}
    for status, text in PROBLEM_STATUSES.items():
        out["responses"][status] = (
            {"description": text, "content": {"text/plain": {"schema": {"type": "string"}}}}
            if op.hermes else {"$ref": "#/components/responses/Problem"} | {"description": text})
    if op.body is not None:
        out["requestBody"] = {"required": True,
                              "content": {"application/json": {"schema": op.body.schema}}}
    if op.root:
        out["servers"] = [{"url": "/"}]
    return out


def openapi(operations: list[Operation], version: str) -> dict[str, Any]:
    """The OpenAPI document of the mounted operations."""
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    header = {"schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "chaintape market data", "version": version,
                 "description": "On-chain market data. Every operation answers without a key; a "
                                "key only raises limits. Costs are in x-chaintape-cost-cu."},
        "servers": [{"url": "/api/v1"}],
        "security": [{}, {"ApiKey": []}, {"Bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                                "Bearer": {"type": "http", "scheme": "bearer"}},
            "headers": {"RequestId": header,
                        **{h.replace("-", ""): header for h in RATE_HEADERS}},
            "responses": {"Problem": {"description": "RFC 9457 problem document", "content": {
                "application/problem+json": {"schema": PROBLEM}}}},
        },
    }


def openapi_yaml(operations: list[Operation], version: str) -> bytes:
    """The document as YAML."""
    text: str = yaml.safe_dump(openapi(operations, version), sort_keys=False)
    return text.encode()
