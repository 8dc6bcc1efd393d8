"""The agent tools on hand-made operations: a tool's schema, the HTTP call a tool call stands
for, and the result an answer becomes."""

import re
from pathlib import Path

import orjson
import pytest

from edge.agents.tools import Answer, ToolError, call_of, result_of, tool, tool_operations
from edge.web.params import Body, Param, choice, flag, integer, listing, path, text
from edge.web.registry import Operation

PAIR = Operation("GET", "/chains/{chain}/pairs/{address}/trades", 40, "Swaps of a pair",
                 (path("chain", 32), path("address"), listing("tx_type", 8, ("buy", "sell")),
                  flag("desc"), integer("limit", (1, 100), 10),
                  text("maker", 128, 1, description="Only this wallet.")), domain="market")
BATCH = Operation("POST", "/pairs/batch", 40, "Pair rows", body=Body({
    "type": "object", "required": ["items"],
    "properties": {"items": {"type": "array", "maxItems": 50}}}))
HERMES = Operation("GET", "/v2/updates/price/latest", 0, "Latest updates",
                   (Param("ids[]", "repeat", max_items=5, min_items=0),
                    choice("encoding", ("hex", "base64"), "hex")))
STREAM = Operation("GET", "/chains/{chain}/pairs/{address}/stream", 20, "A pair's stream",
                   (path("chain", 32), path("address")))


def test_a_tool_is_its_operation_id_parameters_bounds_and_cost() -> None:
    made = tool(PAIR)
    assert made.name == "get_chains_chain_pairs_address_trades"
    assert made.description == ("Swaps of a pair. Costs 40 CU a call, as "
                                "GET /api/v1/chains/{chain}/pairs/{address}/trades.")
    schema = made.input_schema
    assert schema["required"] == ["chain", "address"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["limit"] == {"type": "integer", "format": "int32", "minimum": 1,
                                             "maximum": 100, "default": 10}
    assert schema["properties"]["tx_type"] == {
        "type": "array", "items": {"type": "string", "enum": ["buy", "sell"]},
        "minItems": 1, "maxItems": 8}
    assert schema["properties"]["maker"] == {"type": "string", "minLength": 1, "maxLength": 128,
                                             "description": "Only this wallet."}
    assert made.annotations is not None and made.annotations.read_only_hint
    # The oracle's routes are free and served at the root.
    assert tool(HERMES).description == ("Latest updates. Free a call, as "
                                        "GET /v2/updates/price/latest.")
    # A POST's body fields are arguments.
    assert tool(BATCH).input_schema["required"] == ["items"]
    assert tool(BATCH).input_schema["properties"]["items"]["maxItems"] == 50


def test_streams_are_not_tools() -> None:
    mounted = [PAIR, BATCH, HERMES, STREAM]
    assert STREAM not in tool_operations(mounted)
    assert PAIR in tool_operations(mounted)


def test_a_call_carries_path_list_repeat_and_flag_arguments_as_http_does() -> None:
    call = call_of(PAIR, {"chain": "base", "address": "0xAbC", "tx_type": ["buy", "sell"],
                          "desc": True, "limit": 5, "maker": None})
    assert (call.method, call.path) == ("GET", "/api/v1/chains/base/pairs/0xAbC/trades")
    assert call.query == "tx_type=buy%2Csell&desc=true&limit=5"
    assert call.body is None
    hermes = call_of(HERMES, {"ids[]": ["aa", "bb"]})
    assert (hermes.path, hermes.query) == ("/v2/updates/price/latest", "ids%5B%5D=aa&ids%5B%5D=bb")
    batch = call_of(BATCH, {"items": [{"chain": "base", "address": "0x1"}]})
    assert batch.path == "/api/v1/pairs/batch"
    assert orjson.loads(batch.body or b"") == {"items": [{"chain": "base", "address": "0x1"}]}
    # A value the edge validates is passed as it is: the edge's 400 names it.
    assert call_of(PAIR, {"chain": "base", "address": "x", "limit": "lots"}).query == "limit=lots"


@pytest.mark.parametrize(("arguments", "param"), [
    ({"chain": "base", "address": "x", "limmit": 5}, "limmit"),
    ({"chain": "base", "address": "a/b"}, "address"),
    ({"chain": "base", "address": "x", "limit": [5]}, "limit"),
    ({"chain": "base", "address": "x", "tx_type": [["buy"]]}, "tx_type"),
    ({"chain": {"slug": "base"}, "address": "x"}, "chain"),
])
def test_arguments_no_call_can_carry_name_the_argument(arguments, param) -> None:
    with pytest.raises(ToolError) as refused:
        call_of(PAIR, arguments)
    assert refused.value.param == param


def test_an_answer_becomes_the_json_or_a_tool_error_with_the_problem_code() -> None:
    ok = result_of(Answer(200, {"content-type": "application/json"}, b'{"a": 1}'), "r")
    assert not ok.is_error and ok.structured_content == {"a": 1}
    assert ok.content[0].text == '{"a": 1}'  # type: ignore[union-attr]
    # A JSON array (the Hermes feed list) is the text as it is, and `items` when structured.
    listed = result_of(Answer(200, {"content-type": "application/json"}, b"[1, 2]"), "r")
    assert listed.structured_content == {"items": [1, 2]}
    problem = {"type": "t", "title": "Rate limited", "status": 429, "code": "rate_limited",
               "detail": "the keyless budget is spent; retry in 2 s", "request_id": "r"}
    spent = result_of(Answer(429, {"content-type": "application/problem+json",
                                   "retry-after": "2"}, orjson.dumps(problem)), "r")
    assert spent.is_error
    assert spent.structured_content == {**problem, "retry_after_seconds": 2}
    assert spent.content[0].text.startswith(  # type: ignore[union-attr]
        "rate_limited: the keyless budget is spent; retry in 2 s (retry after 2 s)")
    # The oracle's routes answer errors as text, as Hermes does: a whole problem document is
    # made of it, its code the status's, under the MCP request's id.
    hermes = result_of(Answer(404, {"content-type": "text/plain"}, b"Price ids not found: ab"),
                       "req-7")
    assert hermes.structured_content == {
        "type": "https://docs.chaintape.dev/errors/not_found", "title": "Not found",
        "status": 404, "code": "not_found", "detail": "Price ids not found: ab",
        "request_id": "req-7"}


def test_the_cost_table_of_docs_agents_is_the_catalogs() -> None:
    from edge.app import operations
    from edge.web.registry import Router

    table = (Path(__file__).parents[2] / "docs" / "agents.md").read_text()
    listed = dict(re.findall(r"^\| `(\w+)` \| (free|\d+ CU) \|", table, re.MULTILINE))
    offered = tool_operations(Router(operations()).operations)
    assert listed == {op.operation_id: f"{op.cost_cu} CU" if op.cost_cu else "free"
                      for op in offered}
