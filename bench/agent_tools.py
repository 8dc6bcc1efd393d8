"""A tool call's overhead against the HTTP call it stands for, side by side in one run: the same
pair rows, wallet profiles and pair lists read over HTTP, as tools over Streamable HTTP at /mcp
on the same edge, and as tools over stdio (`chaintape mcp`, answering in-process from the
local snapshot). Calls are sequential and interleaved (HTTP, /mcp, stdio for each path), each
with an API key, so the three see the same edge state.

Prints one JSON line per operation and one over all: median and p99 per transport, in ms, and
the tool's overhead (median minus the HTTP median).

    .venv/bin/python bench/agent_tools.py [--home var] [--rounds 300]
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"
sys.path.insert(0, str(REPO))

from bench.load import internal_key  # noqa: E402
from bench.oracle import prepared_home  # noqa: E402
from tests.conftest import edge_process  # noqa: E402

TRANSPORTS = ("http", "mcp_http", "mcp_stdio")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def targets(client: httpx.Client, count: int) -> list[tuple[str, str, dict[str, Any], dict]]:
    """(operation, path, tool arguments, query) of pair rows, wallet profiles and pair lists."""
    pairs = client.get("/api/v1/pairs", params={"limit": 100, "sort": "volume"}).json()["items"]
    out = []
    for row in pairs[:count]:
        chain, address = row["network"]["slug"], row["pair_address"]
        out.append(("pair row", f"/api/v1/chains/{chain}/pairs/{address}",
                    {"chain": chain, "address": address}, {}))
    wallets = client.get("/api/v1/wallets", params={"chain": "ethereum", "limit": count}) \
        .json()["items"]
    for wallet in wallets:
        out.append(("wallet profile", f"/api/v1/chains/ethereum/wallets/{wallet['address']}",
                    {"chain": "ethereum", "address": wallet["address"]}, {}))
    out.append(("pair list", "/api/v1/pairs", {"limit": 50, "sort": "volume"},
                {"limit": 50, "sort": "volume"}))
    return out


TOOLS = {"pair row": "get_chains_chain_pairs_address",
         "wallet profile": "get_chains_chain_wallets_address", "pair list": "get_pairs"}


async def measure(base: str, key: str, home: Path, rounds: int, count: int) -> dict:
    """Per operation and transport, each call's milliseconds."""
    headers = {"X-API-Key": key}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as sync:
        made = targets(sync, count)
    times: dict[str, dict[str, list[float]]] = {op: {t: [] for t in TRANSPORTS}
                                                for op in TOOLS}
    stdio = StdioServerParameters(command=str(CLI), args=["mcp", "--key", key],
                                  env={**os.environ, "CHAINTAPE_HOME": str(home)})
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client, \
            httpx.AsyncClient(headers=headers, timeout=30) as agent_client, \
            streamable_http_client(base + "/mcp", http_client=agent_client) as (read, write), \
            ClientSession(read, write) as over_http, \
            stdio_client(stdio) as (stdio_read, stdio_write), \
            ClientSession(stdio_read, stdio_write) as over_stdio:
        await over_http.initialize()
        await over_stdio.initialize()
        for done in range(rounds):
            for op, path, arguments, query in made:
                start = time.perf_counter()
                answer = await client.get(path, params=query)
                times[op]["http"].append((time.perf_counter() - start) * 1e3)
                assert answer.status_code == 200, answer.text
                for transport, session in (("mcp_http", over_http), ("mcp_stdio", over_stdio)):
                    start = time.perf_counter()
                    result = await session.call_tool(TOOLS[op], arguments)
                    times[op][transport].append((time.perf_counter() - start) * 1e3)
                    assert not result.is_error, result.content
            if done % 50 == 0:
                print(f"round {done + 1}/{rounds}", file=sys.stderr, flush=True)
    return times


def summary(name: str, times: dict[str, list[float]]) -> dict:
    http = statistics.median(times["http"])
    out: dict[str, Any] = {"bench": "agent_tools", "operation": name, "calls": len(times["http"])}
    for transport in TRANSPORTS:
        out[f"{transport}_median_ms"] = round(statistics.median(times[transport]), 3)
        out[f"{transport}_p99_ms"] = round(percentile(times[transport], 0.99), 3)
    for transport in TRANSPORTS[1:]:
        out[f"{transport}_overhead_ms"] = round(statistics.median(times[transport]) - http, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--paths", type=int, default=10, help="pairs and wallets each")
    args = parser.parse_args()
    home = prepared_home(args.home)
    env = {**os.environ, "CHAINTAPE_HOME": str(home)}
    key = internal_key(env)
    with edge_process(home) as base:
        times = asyncio.run(measure(base, key, home, args.rounds, args.paths))
    every: dict[str, list[float]] = {t: [] for t in TRANSPORTS}
    for name, measured in times.items():
        print(json.dumps(summary(name, measured)), flush=True)
        for transport in TRANSPORTS:
            every[transport] += measured[transport]
    print(json.dumps(summary("all", every)), flush=True)


if __name__ == "__main__":
    main()
