"""The agent-tool server through the official MCP client, over Streamable HTTP at /mcp on the
edge's own port and over stdio (`chaintape mcp`): every answer equals the HTTP call it stands
for, bad input is a tool error with the problem's code, and a spent budget names its retry."""

import asyncio
import os
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import pytest
import yaml
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import BIN, edge_process
from tests.edge.conftest import first_refusal, issue_key

Session = Callable[[ClientSession], Awaitable[Any]]


def over_http(url: str, headers: dict[str, str] | None = None) -> Callable[[Session], Any]:
    """Runs a client session against /mcp at `url`, with `headers` on every request."""
    def run(body: Session) -> Any:
        async def main() -> Any:
            async with httpx.AsyncClient(headers=headers, timeout=30) as client, \
                    streamable_http_client(url + "/mcp", http_client=client) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)
        return asyncio.run(main())
    return run


def over_stdio(home, *args: str) -> Callable[[Session], Any]:
    """Runs a client session against `chaintape mcp *args` over `home`."""
    def run(body: Session) -> Any:
        params = StdioServerParameters(command=str(BIN / "chaintape"), args=["mcp", *args],
                                       env={**os.environ, "CHAINTAPE_HOME": str(home)})

        async def main() -> Any:
            transport: AbstractAsyncContextManager[Any] = stdio_client(params)
            async with transport as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)
        return asyncio.run(main())
    return run


def call(run: Callable[[Session], Any], name: str, arguments: dict[str, Any]) -> Any:
    """One tool call's result."""
    return calls(run, (name, arguments))[0]


def calls(run: Callable[[Session], Any], *made: tuple[str, dict[str, Any]]) -> list[Any]:
    """The results of tool calls made one after another in one session."""
    async def body(session: ClientSession) -> Any:
        return [await session.call_tool(name, arguments) for name, arguments in made]
    return run(body)


@pytest.fixture(scope="module")
def served(home):
    """An edge of this module's own (its keyless budget is this module's alone) and a key."""
    with edge_process(home, CHAINTAPE_POLL_SECONDS="0.2") as base:
        yield base, issue_key(home, "internal")


@pytest.fixture(scope="module")
def keyed(served):
    base, key = served
    with httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=30) as client:
        yield client, over_http(base, {"X-API-Key": key})


def test_the_tools_are_the_catalog_with_its_parameters_bounds_and_costs(keyed) -> None:
    client, run = keyed

    async def body(session: ClientSession) -> Any:
        return await session.list_tools()

    tools = {t.name: t for t in run(body).tools}
    spec = yaml.safe_load(client.get("/openapi.yml").text)
    expected = {}
    for route, methods in spec["paths"].items():
        for op in methods.values():
            streamed = "text/event-stream" in op["responses"]["200"]["content"]
            if not streamed:
                expected[op["operationId"]] = op
            else:
                assert op["operationId"] not in tools, route
    assert tools.keys() == expected.keys()
    for name, op in expected.items():
        made = tools[name]
        cost = op["x-chaintape-cost-cu"]
        assert made.description is not None and op["summary"] in made.description
        assert (f"Costs {cost} CU a call" if cost else "Free a call") in made.description
        properties = made.input_schema["properties"]
        query = [p for p in op["parameters"] if p["in"] in ("query", "path")]
        for param in query:
            described = {k: v for k, v in properties[param["name"]].items() if k != "description"}
            assert described == param["schema"], (name, param["name"])
        body_fields = op.get("requestBody", {}).get("content", {}).get(
            "application/json", {}).get("schema", {}).get("properties", {})
        assert set(properties) == {p["name"] for p in query} | set(body_fields), name
        assert set(made.input_schema.get("required", [])) == \
            {p["name"] for p in query if p["required"]} | set(
                op.get("requestBody", {}).get("content", {}).get("application/json", {}).get(
                    "schema", {}).get("required", []))


def test_a_pair_a_cursor_page_and_a_wallet_equal_their_http_calls(keyed) -> None:
    client, run = keyed
    first = client.get("/api/v1/pairs", params={"limit": 3, "sort": "volume"}).json()
    tool_first = call(run, "get_pairs", {"limit": 3, "sort": "volume"})
    assert not tool_first.is_error and tool_first.structured_content == first
    cursor = first["next_cursor"]
    assert cursor
    second = client.get("/api/v1/pairs", params={"limit": 3, "sort": "volume",
                                                 "cursor": cursor}).json()
    assert call(run, "get_pairs", {"limit": 3, "sort": "volume", "cursor": cursor}) \
        .structured_content == second
    assert second["items"] != first["items"]
    pair = first["items"][0]
    address, chain = pair["pair_address"], pair["network"]["slug"]
    looked = call(run, "get_chains_chain_pairs_address", {"chain": chain, "address": address})
    assert looked.structured_content == client.get(
        f"/api/v1/chains/{chain}/pairs/{address}").json()
    wallet = client.get("/api/v1/wallets", params={"chain": chain, "limit": 1}).json()[
        "items"][0]["address"]
    profile = call(run, "get_chains_chain_wallets_address", {"chain": chain, "address": wallet})
    assert profile.structured_content == client.get(
        f"/api/v1/chains/{chain}/wallets/{wallet}").json()
    # A POST's body fields are the tool's arguments.
    refs = [{"chain": chain, "address": address}]
    assert call(run, "post_pairs_batch", {"items": refs}).structured_content == client.post(
        "/api/v1/pairs/batch", json={"items": refs}).json()
    # The key the MCP request carries is the call's key.
    assert call(run, "get_key", {}).structured_content["plan"] == "internal"


def test_bad_input_is_a_tool_error_with_the_problem_code_and_detail(keyed) -> None:
    client, run = keyed
    for name, arguments, path, query in (
            ("get_pairs", {"limit": 0}, "/api/v1/pairs", {"limit": 0}),
            ("get_pairs", {"sort": "loudest"}, "/api/v1/pairs", {"sort": "loudest"}),
            ("get_chains_chain_pairs_address", {"chain": "atlantis", "address": "0x1"},
             "/api/v1/chains/atlantis/pairs/0x1", {}),
            ("get_search", {}, "/api/v1/search", {})):
        answer = client.get(path, params=query)
        assert answer.status_code in (400, 404), answer.text
        problem = answer.json()
        result = call(run, name, arguments)
        assert result.is_error
        got = result.structured_content
        assert (got["code"], got["detail"], got.get("param")) == \
            (problem["code"], problem["detail"], problem.get("param"))
        assert result.content[0].text.startswith(f"{problem['code']}: {problem['detail']}")
    unknown = call(run, "get_pairs", {"limmit": 5})
    assert unknown.is_error and unknown.structured_content["code"] == "invalid_param"
    assert unknown.structured_content["param"] == "limmit"
    assert call(run, "get_nothing", {}).structured_content["code"] == "not_found"


def test_a_spent_budget_is_a_tool_error_naming_rate_limited_and_its_retry(served, keyed) -> None:
    base, _ = served
    client, _ = keyed
    wallet = client.get("/api/v1/wallets", params={"chain": "ethereum", "limit": 1}).json()[
        "items"][0]["address"]
    # Tool calls and HTTP calls spend one keyless budget: spent over HTTP (60 CU a call, 6 of
    # the 20 units), the tool is refused.
    calls, refused = first_refusal(base, f"/api/v1/wallets/{wallet}/overview")
    assert refused is not None and refused.status_code == 429, calls
    result = call(over_http(base), "get_wallets_address_overview", {"address": wallet})
    assert result.is_error
    got = result.structured_content
    assert got["code"] == "rate_limited" and got["retry_after_seconds"] >= 1
    assert "retry" in result.content[0].text


def test_mcp_over_asgi_answers_as_over_rsgi(home) -> None:
    with edge_process(home, "asgi") as base:
        result = call(over_http(base), "get_chains", {"limit": 2})
        assert result.structured_content == httpx.get(base + "/api/v1/chains?limit=2").json()


def test_stdio_answers_from_the_local_snapshot_or_a_configured_edge(home, served) -> None:
    base, key = served
    expected = httpx.get(base + "/api/v1/chains", params={"limit": 2},
                         headers={"X-API-Key": key}).json()
    assert call(over_stdio(home), "get_chains", {"limit": 2}).structured_content == expected
    remote = over_stdio(home, "--edge", base, "--key", key)
    chains, plan, bad = calls(remote, ("get_chains", {"limit": 2}), ("get_key", {}),
                              ("get_chains", {"limit": 500}))
    assert chains.structured_content == expected
    assert plan.structured_content["plan"] == "internal"
    assert bad.is_error and bad.structured_content["param"] == "limit"
    gone = call(over_stdio(home, "--edge", "http://127.0.0.1:9"), "get_chains", {})
    assert gone.is_error and gone.structured_content["code"] == "upstream_unavailable"


def test_the_transport_answers_what_it_does_not_serve_without_a_5xx(served) -> None:
    base, _ = served
    url = base + "/mcp"
    json_rpc = {"content-type": "application/json",
                "accept": "application/json, text/event-stream"}
    # Stateless: no event stream to open and no session to end.
    for method in ("GET", "DELETE"):
        refused = httpx.request(method, url, headers=json_rpc, timeout=10)
        assert refused.status_code == 405 and refused.headers["allow"] == "POST"
    assert httpx.post(url, content=b"{not json", headers=json_rpc).status_code == 400
    assert httpx.post(url, content=b"{}", headers={"content-type": "text/plain"}) \
        .status_code < 500
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_chains", "arguments": "not an object"}}
    answer = httpx.post(url, json=call, headers=json_rpc)
    assert answer.status_code < 500 and answer.json()["error"]["code"] == -32602


def test_every_mcp_answer_names_its_request_and_every_error_is_a_whole_problem(served) -> None:
    base, key = served
    url = base + "/mcp"
    json_rpc = {"content-type": "application/json",
                "accept": "application/json, text/event-stream", "x-api-key": key}

    def tool_call(name: str, arguments: dict, request_id: str) -> httpx.Response:
        answer = httpx.post(url, headers={**json_rpc, "x-request-id": request_id}, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-request-id"] == request_id
        return answer

    whole = ("type", "title", "status", "code", "detail", "request_id")
    for name, arguments, code in (
            ("get_pairs", {"limmit": 5}, "invalid_param"),       # refused before the call
            ("get_nothing", {}, "not_found"),                    # no such tool
            ("get_v2_updates_price_latest", {"ids[]": ["ab"]}, "invalid_param"),  # oracle text
            ("get_pairs", {"limit": 0}, "invalid_param")):       # the edge's own problem
        got = tool_call(name, arguments, f"agent-{name}").json()["result"]
        assert got["isError"], got
        problem = got["structuredContent"]
        assert set(whole) <= set(problem), problem
        assert (problem["code"], problem["request_id"]) == (code, f"agent-{name}")
        assert problem["type"].endswith("/" + code)
    # Without an id of the client's, a fresh one, on the transport's own answers too.
    for method in ("GET", "POST"):
        answer = httpx.request(method, url, headers=json_rpc, content=b"{not json", timeout=10)
        assert answer.headers["x-request-id"]
        assert answer.status_code in (400, 405)


def test_a_body_that_is_not_json_rpc_is_a_short_json_rpc_error(served) -> None:
    base, _ = served
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    for body, code in ((b"{not json", -32700), (b'{"hello": "world"}', -32600),
                       (b"[]", -32600), (b'{"jsonrpc": "2.0", "method": "x", "params": 5}',
                                         -32600)):
        answer = httpx.post(base + "/mcp", content=body, headers=headers, timeout=10)
        assert answer.status_code == 400
        assert len(answer.content) < 300, answer.text
        assert answer.json()["error"]["code"] == code


def test_an_mcp_body_past_the_bound_is_refused_before_it_is_read(served) -> None:
    import socket
    from urllib.parse import urlsplit

    base, _ = served
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    # One byte past 64 KiB: the problem document of every route, 413, naming the body.
    answer = httpx.post(base + "/mcp", content=b" " * (64 * 1024 + 1), headers=headers,
                        timeout=30)
    assert answer.status_code == 413
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert (problem["code"], problem["param"]) == ("invalid_param", "body")
    assert problem["request_id"] == answer.headers["x-request-id"]
    # 64 MiB declared and not one byte of it sent: refused at once, nothing waited for.
    where = urlsplit(base)
    with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
        conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 67108864\r\n\r\n")
        head = conn.recv(4096)
    assert head.startswith(b"HTTP/1.1 413")
