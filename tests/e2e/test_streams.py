"""The market streams over a real socket, fed by a real chain: a V2 market on an anvil node
followed into the lake, one snapshot published, the live tail following the lake; swaps and a
new pool mined after the snapshot reach the streams' clients."""

import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field

import httpx
import pytest

from core.feeds import FEED_BY_BASE
from sources.evm.devnet import Devnet, start_node, v2_market
from sources.evm.rpc import quantity
from sources.lake import Lake
from tests.conftest import BIN, edge_process, run_cli
from tests.edge.conftest import issue_key

E18 = 10**18
SWAP_TOPIC = "0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822"


@dataclass
class Client:
    """An SSE client on its own thread: every event it read, as parsed fields, and every
    comment line."""

    url: str
    headers: dict = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    status: int | None = None
    ended: bool = False

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            with httpx.stream("GET", self.url, headers=self.headers, timeout=60) as answer:
                self.status = answer.status_code
                event: dict = {}
                for line in answer.iter_lines():
                    if line.startswith(":"):
                        self.comments.append(line)
                    elif not line:
                        if event:
                            self.events.append(event)
                        event = {}
                    else:
                        name, _, value = line.partition(": ")
                        event[name] = value
        except httpx.HTTPError:
            # The edge stopped under an open stream (the module's end): the stream ends.
            pass
        self.ended = True

    def wait(self, predicate, timeout: float = 20.0):
        """The first event that satisfies `predicate`, waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [e for e in list(self.events) if predicate(e)]
            if found:
                return found[0]
            time.sleep(0.05)
        raise TimeoutError(f"{self.url}: no such event among {self.events}")

    def trades(self) -> list[str]:
        return [e["id"] for e in self.events if e.get("event") == "trade"]


def swap_id(receipt: dict) -> str:
    """The stream event id of a receipt's Swap log (block:log)."""
    log = next(entry for entry in receipt["logs"] if entry["topics"][0] == SWAP_TOPIC)
    return f"{quantity(log['blockNumber'])}:{quantity(log['logIndex'])}"


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """A pair with liquidity and one buy, published; then the follower, the tail and an edge
    keep running."""
    home = tmp_path_factory.mktemp("streams-home")
    node = start_node()
    net = Devnet(node.url)
    procs: list[subprocess.Popen] = []
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    try:
        market = v2_market(net)
        pepe = market.token("Pepe", "PEPE", 10**9 * E18)
        pair = market.pair(pepe)
        market.approve(0, market.quote, pepe)
        weth_is_0 = sorted([pepe, market.quote])[0] == market.quote
        reserves = (1_000 * E18, 1_000_000 * E18)
        market.add_liquidity(pair, *(reserves if weth_is_0 else reserves[::-1]))
        market.transfer(market.quote, 1, 100 * E18)
        market.approve(1, market.quote, pepe)
        first = market.swap(pair, market.quote, E18, 1)
        venues = home / "venues.yaml"
        venues.write_text(market.venues_file(FEED_BY_BASE["ETH"].feed_id))
        procs.append(subprocess.Popen(
            [str(BIN / "chaintape"), "ingest", "evm", "--rpc", node.url, "--venues",
             str(venues), "--follow", "--poll", "0.2", "--confirmations", "0"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        lake = Lake(home / "lake")
        deadline = time.monotonic() + 120
        while lake.progress() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        made = run_cli(["materialize"], home)
        assert made.returncode == 0, made.stderr
        procs.append(subprocess.Popen([str(BIN / "chaintape"), "tail", "--poll", "0.1"],
                                      env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        with edge_process(home, CHAINTAPE_LIVE_POLL_SECONDS="0.1",
                          CHAINTAPE_STREAM_HEARTBEAT_SECONDS="0.5") as base:
            yield {"home": home, "base": base + "/api/v1", "market": market, "pepe": pepe,
                   "pair": pair.lower(), "first": first, "chain_id": net.rpc.call("eth_chainId"),
                   "net": net}
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(15)
        net.close()
        node.stop()


def test_swaps_reach_the_pair_stream_and_a_reconnect_resumes_exactly_after_its_last_event(chain):
    market, pair = chain["market"], chain["pair"]
    chain_id = quantity(chain["chain_id"])
    url = f"{chain['base']}/chains/{chain_id}/pairs/{pair}/stream"
    client = Client(url)
    opened = client.wait(lambda e: e.get("event") == "window")
    assert client.status == 200
    # The snapshot's one buy: the opening window block counts it, and the stream starts after
    # it (a new client starts from now).
    assert opened["id"] == swap_id(chain["first"]) and client.trades() == []
    buy = market.swap(pair, market.quote, 2 * E18, 1)
    sell = market.swap(pair, chain["pepe"], 100 * E18, 1)
    client.wait(lambda e: e.get("id") == swap_id(sell) and e.get("event") == "trade")
    assert client.trades() == [swap_id(buy), swap_id(sell)]
    window = client.wait(lambda e: e.get("event") == "window" and '"sells":1' in e["data"])
    assert '"buys":2' in window["data"]
    # Reconnecting after the buy: the sell alone, once; after the snapshot's buy: both.
    again = Client(url, {"Last-Event-ID": swap_id(buy)})
    again.wait(lambda e: e.get("event") == "window")
    assert again.trades() == [swap_id(sell)]
    whole = Client(url, {"Last-Event-ID": swap_id(chain["first"])})
    whole.wait(lambda e: e.get("event") == "window")
    assert whole.trades() == [swap_id(buy), swap_id(sell)]
    # The same swaps are what the trades lookup serves, live.
    listed = httpx.get(f"{chain['base']}/chains/{chain_id}/pairs/{pair}/trades").json()["items"]
    assert [f"{t['block_info']['block_number']}:{t['block_info']['log_index']}"
            for t in listed[:2]] == [swap_id(sell), swap_id(buy)]


def test_a_new_pool_reaches_the_new_pairs_stream_and_trades_live(chain):
    market = chain["market"]
    chain_id = quantity(chain["chain_id"])
    client = Client(f"{chain['base']}/pairs/new/stream?chain={chain_id}")
    time.sleep(1.0)
    doge = market.token("Doge", "DOGE", 10**9 * E18)
    fresh = market.pair(doge).lower()
    market.approve(0, doge)
    weth_is_0 = sorted([doge, market.quote])[0] == market.quote
    amounts = (10 * E18, 10_000 * E18)
    market.add_liquidity(fresh, *(amounts if weth_is_0 else amounts[::-1]))
    event = client.wait(lambda e: e.get("event") == "pair", timeout=30)
    assert fresh in event["data"] and doge.lower() in event["data"]
    assert [e["event"] for e in client.events if e.get("event") == "pair"] == ["pair"]
    market.approve(1, doge)
    bought = market.swap(fresh, market.quote, E18 // 10, 1)
    deadline = time.monotonic() + 20
    served: list = []
    while time.monotonic() < deadline and swap_id(bought) not in served:
        answer = httpx.get(f"{chain['base']}/chains/{chain_id}/pairs/{fresh}/trades")
        if answer.status_code == 200:
            served = [f"{t['block_info']['block_number']}:{t['block_info']['log_index']}"
                      for t in answer.json()["items"]]
        time.sleep(0.1)
    assert swap_id(bought) in served


def test_a_reader_that_stops_reading_does_not_stall_the_others(chain):
    market, pair = chain["market"], chain["pair"]
    chain_id = quantity(chain["chain_id"])
    host, port = chain["base"].split("//")[1].split("/")[0].split(":")
    path = f"/api/v1/chains/{chain_id}/pairs/{pair}/stream"
    stuck = []
    for _ in range(3):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        sock.connect((host, int(port)))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        stuck.append(sock)
    key = issue_key(chain["home"], "internal")
    client = Client(chain["base"].removesuffix("/api/v1") + path, {"X-API-Key": key})
    client.wait(lambda e: e.get("event") == "window")
    swaps = [market.swap(pair, market.quote, E18 // 100, 1) for _ in range(5)]
    client.wait(lambda e: e.get("id") == swap_id(swaps[-1]) and e.get("event") == "trade")
    assert client.trades() == [swap_id(s) for s in swaps]
    assert httpx.get(chain["base"] + "/status", timeout=5).status_code == 200
    for sock in stuck:
        sock.close()


def test_streams_are_bounded_per_client_and_idle_ones_get_heartbeats(chain):
    chain_id = quantity(chain["chain_id"])
    key = issue_key(chain["home"], "internal")
    url = f"{chain['base']}/chains/{chain_id}/pairs/{chain['pair']}/stream"
    held = [Client(url, {"X-API-Key": key}) for _ in range(8)]
    for client in held:
        client.wait(lambda e: e.get("event") == "window")
    refused = httpx.get(url, headers={"X-API-Key": key}, timeout=10)
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "rate_limited"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not held[0].comments:
        time.sleep(0.1)
    assert held[0].comments and held[0].comments[0] == ": heartbeat"


def test_a_stream_ends_after_the_longest_duration_and_says_so(chain):
    chain_id = quantity(chain["chain_id"])
    with edge_process(chain["home"], CHAINTAPE_STREAM_MAX_SECONDS="1.5",
                      CHAINTAPE_STREAM_HEARTBEAT_SECONDS="0.3") as base:
        client = Client(f"{base}/api/v1/chains/{chain_id}/pairs/{chain['pair']}/stream")
        end = client.wait(lambda e: e.get("event") == "end", timeout=10)
        assert '"max_duration"' in end["data"]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not client.ended:
            time.sleep(0.05)
        assert client.ended
