"""Provider faults through a real HTTP proxy in front of anvil: log ranges refused as too wide
are split, 429s and 5xxs are retried, and what cannot be read stops the ingest, never a gap."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import polars as pl
import pytest
import yaml

from sources.evm.config import parse
from sources.evm.ingest import Follower
from sources.evm.rpc import Rpc, RpcError
from sources.lake import Lake
from tests.sources.evm.conftest import ETH_FEED

E18 = 10**18
FAST = (0.01, 0.01, 0.02)


class Proxy:
    """Forwards JSON-RPC to the node, but refuses eth_getLogs ranges wider than `widest`
    blocks, answers 429 to every `throttle`-th request, and fails every log query that covers
    `broken` with a 500."""

    def __init__(self, upstream: str, widest: int | None = None, throttle: int | None = None,
                 broken: int | None = None) -> None:
        self.upstream, self.widest, self.throttle, self.broken = upstream, widest, throttle, broken
        self.requests = self.refused = self.throttled = 0
        self.answered: list[int] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                status, answer = proxy.answer(json.loads(body))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.client = httpx.Client(timeout=30)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, request) -> tuple[int, bytes]:
        self.requests += 1
        if self.throttle and self.requests % self.throttle == 0:
            self.throttled += 1
            return 429, b'{"error": "slow down"}'
        calls = request if isinstance(request, list) else [request]
        for call in calls:
            if call["method"] != "eth_getLogs":
                continue
            query = call["params"][0]
            first, last = int(query["fromBlock"], 16), int(query["toBlock"], 16)
            if self.broken is not None and first <= self.broken <= last:
                return 500, b'{"error": "upstream exploded"}'
            if self.widest is not None and last - first + 1 > self.widest:
                self.refused += 1
                return 200, json.dumps({"jsonrpc": "2.0", "id": call["id"], "error": {
                    "code": -32005,
                    "message": f"query exceeds max block range {self.widest}"}}).encode()
            self.answered.append(last - first + 1)
        return 200, self.client.post(self.upstream, content=json.dumps(request),
                                     headers={"content-type": "application/json"}).content

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()


@pytest.fixture
def proxy(node):
    made: list[Proxy] = []

    def make(**kw) -> Proxy:
        made.append(Proxy(node.url, **kw))
        return made[-1]

    yield make
    for p in made:
        p.close()


@pytest.fixture
def busy(market):
    """A pair traded in ten blocks."""
    pair, _ = market.pool("Pepe", "PEPE", 10**21, 10**24)
    for i in range(10):
        market.swap(pair, market.quote, (i + 1) * E18 // 10, 0)
    return market


def config(market):
    return parse(yaml.safe_load(market.venues_file(ETH_FEED)))


def events(lake: Lake) -> dict[str, pl.DataFrame]:
    return {name: lake.read(name).sort("block_number", "log_index")
            for name in ("swaps", "reserves", "transfers", "liquidity_events")}


def test_refused_ranges_are_split_and_throttling_retried(busy, proxy, tmp_path):
    direct = Lake(tmp_path / "direct")
    with Rpc(busy.net.rpc.url) as rpc:
        Follower(rpc, config(busy), direct, batch_blocks=100).run()
    picky = proxy(widest=2, throttle=4)
    through = Lake(tmp_path / "through")
    with Rpc(picky.url, backoff_s=FAST) as rpc:
        Follower(rpc, config(busy), through, batch_blocks=100).run()
        assert rpc.retries >= picky.throttled > 0
    assert picky.refused > 0
    assert max(picky.answered) <= 2
    expected, got = events(direct), events(through)
    assert expected["swaps"].height == 10
    for name in expected:
        assert got[name].equals(expected[name]), name


def test_a_range_that_cannot_be_read_stops_the_ingest_before_it(busy, proxy, tmp_path):
    head = busy.net.block_number()
    broken = head - 3
    failing = proxy(broken=broken)
    lake = Lake(tmp_path / "lake")
    with Rpc(failing.url, backoff_s=FAST) as rpc:
        follower = Follower(rpc, config(busy), lake, batch_blocks=1)
        with pytest.raises(RpcError, match="HTTP 500, still after 3 retries"):
            follower.run()
    mark = lake.progress()
    assert mark is not None and mark.meta["next_block"] == broken
    assert lake.read("swaps")["block_number"].max() < broken
