"""Provider faults through a real HTTP proxy in front of anvil: log ranges refused as too wide
are split, 429s and 5xxs are retried, and what cannot be read stops the ingest, never a gap."""

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import polars as pl
import pytest
import yaml

from sources.evm.config import parse
from sources.evm.ingest import Follower
from sources.evm.rpc import RateLimit, Rpc, RpcError, _too_wide, rate_limited
from sources.lake import LakeWriter

E18 = 10**18
FAST = (0.01, 0.01, 0.02)


class Proxy:
    """Forwards JSON-RPC to the node, but refuses eth_getLogs ranges wider than `widest`
    blocks, answers 429 to every `throttle`-th request, and fails every log query that covers
    `broken` with a 500; each request answered `delay_s` late (a provider's round trip)."""

    def __init__(self, upstream: str, widest: int | None = None, throttle: int | None = None,
                 broken: int | None = None, limit: int | None = None,
                 retry_after: str | None = None, delay_s: float = 0.0) -> None:
        self.upstream, self.widest, self.throttle, self.broken = upstream, widest, throttle, broken
        self.limit, self.retry_after, self.delay_s = limit, retry_after, delay_s
        self.times: list[float] = []
        self.requests = self.refused = self.throttled = self.limited = 0
        self.methods: list[str] = []
        self.answered: list[int] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                status, answer = proxy.answer(json.loads(body))
                self.send_response(status)
                if status == 429 and proxy.retry_after is not None:
                    self.send_header("retry-after", proxy.retry_after)
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
        self.times.append(time.monotonic())
        time.sleep(self.delay_s)
        self.requests += 1
        if self.throttle and self.requests % self.throttle == 0:
            self.throttled += 1
            return 429, b'{"error": "slow down"}'
        calls = request if isinstance(request, list) else [request]
        if self.limit and self.requests % self.limit == 0:
            # Infura's way: HTTP 200, each call a JSON-RPC error saying the rate is exceeded.
            self.limited += 1
            self.methods.extend(call["method"] for call in calls)
            errors = [{"jsonrpc": "2.0", "id": call["id"], "error": {
                "code": -32005, "message": "project ID request rate exceeded, rate limit hit"}}
                for call in calls]
            return 200, json.dumps(errors if isinstance(request, list) else errors[0]).encode()
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
    return parse(yaml.safe_load(market.venues_file()))


def events(lake: LakeWriter) -> dict[str, pl.DataFrame]:
    return {name: lake.read(name).sort("block_number", "log_index")
            for name in ("swaps", "reserves", "transfers", "liquidity_events")}


def test_refused_ranges_are_split_and_throttling_retried(busy, proxy, tmp_path):
    direct = LakeWriter(tmp_path / "direct")
    with Rpc(busy.net.rpc.url) as rpc:
        Follower.open(rpc, config(busy), direct, batch_blocks=100).run()
    picky = proxy(widest=2, throttle=4)
    through = LakeWriter(tmp_path / "through")
    with Rpc(picky.url, backoff_s=FAST) as rpc:
        Follower.open(rpc, config(busy), through, batch_blocks=100).run()
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
    lake = LakeWriter(tmp_path / "lake")
    with Rpc(failing.url, backoff_s=FAST) as rpc:
        follower = Follower.open(rpc, config(busy), lake, batch_blocks=1)
        with pytest.raises(RpcError, match="HTTP 500, still after 3 retries"):
            follower.run()
    mark = lake.progress()
    assert mark is not None and mark.meta["next_block"] == broken
    assert lake.read("swaps")["block_number"].max() < broken


def test_a_rate_limit_in_a_200_answer_is_waited_out_for_any_call_not_split(busy, proxy,
                                                                          tmp_path):
    direct = LakeWriter(tmp_path / "direct")
    with Rpc(busy.net.rpc.url) as rpc:
        Follower.open(rpc, config(busy), direct, batch_blocks=100).run()
    limiting = proxy(limit=3)
    through = LakeWriter(tmp_path / "through")
    with Rpc(limiting.url, backoff_s=FAST) as rpc:
        Follower.open(rpc, config(busy), through, batch_blocks=100).run()
        assert rpc.retries >= limiting.limited > 0
    # Log queries were never split: each asked the batch's whole range, as directly.
    assert limiting.answered and min(limiting.answered) > 1
    # Calls other than eth_getLogs met the limit too, and were asked again.
    assert set(limiting.methods) - {"eth_getLogs"}
    expected, got = events(direct), events(through)
    for name in expected:
        assert got[name].equals(expected[name]), name


def test_retry_after_is_honoured(busy, proxy):
    slept: list[float] = []
    throttling = proxy(throttle=1, retry_after="3")
    with Rpc(throttling.url, backoff_s=(0.01, 0.01), sleep=slept.append) as rpc, \
            pytest.raises(RpcError, match="HTTP 429, still after 2 retries"):
        rpc.call("eth_blockNumber")
    assert slept == [3.0, 3.0]


@pytest.mark.parametrize(("message", "too_wide", "limited"), [
    ("query exceeds max block range 2000", True, False),
    ("query returned more than 10000 results", True, False),
    ("Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range",
     True, False),
    ("block range is too wide", True, False),
    ("project ID request rate exceeded", False, True),
    ("Your app has exceeded its compute units per second capacity", False, True),
    ("daily request count exceeded, request rate limited", False, True),
    ("execution reverted", False, False),
])
def test_errors_are_read_for_what_they_say(message, too_wide, limited):
    assert _too_wide(RpcError("eth_getLogs", message, -32005)) is too_wide
    answer = {"jsonrpc": "2.0", "id": 0, "error": {"code": -32005, "message": message}}
    assert (rate_limited(answer) == message) is limited
    assert (rate_limited([{"id": 1, "result": "0x1"}, answer]) == message) is limited


def test_an_unreachable_node_is_named():
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    with Rpc(url, backoff_s=FAST) as rpc, pytest.raises(RpcError, match=url):
        rpc.call("eth_chainId")


def test_concurrent_reads_equal_a_sequential_read_within_the_rate(busy, proxy, tmp_path):
    """Eight requests in flight and at most 40 a second, through a proxy that also refuses wide
    ranges and answers rate limits: the lake is the one a direct, sequential read makes."""
    direct = LakeWriter(tmp_path / "direct")
    with Rpc(busy.net.rpc.url) as rpc:
        Follower.open(rpc, config(busy), direct, confirmations=0, batch_blocks=40).run()
    slow = proxy(widest=2, limit=9, delay_s=0.02)
    lake = LakeWriter(tmp_path / "lake")
    with Rpc(slow.url, backoff_s=FAST, concurrency=8, max_rps=40) as rpc:
        Follower.open(rpc, config(busy), lake, confirmations=0, batch_blocks=40).run()
    for name, frame in events(direct).items():
        assert events(lake)[name].equals(frame), name
    assert slow.refused and slow.limited
    # No second of requests holds more than the rate allows (one at its edge).
    times = sorted(slow.times)
    assert len(times) > 2 * 41
    assert max(sum(1 for t in times if start <= t < start + 1.0) for start in times) <= 41


def test_a_late_turn_moves_the_next_ones_later():
    """Each sleep overshoots by 30 ms at 10 a second: every request still goes at least 100 ms
    after the one before, and no second holds more than ten."""
    now = [0.0]

    def oversleep(seconds: float) -> None:
        now[0] += seconds + 0.03

    limit = RateLimit(10, oversleep, lambda: now[0])
    sent = []
    for _ in range(30):
        limit.wait()
        sent.append(now[0])
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert min(gaps) >= 0.1 - 1e-9
    assert max(sum(1 for t in sent if start <= t < start + 1.0) for start in sent) <= 10


def test_the_rate_caps_a_second_however_the_turns_fall():
    """15 a second with a clock that jumps: a burst after a pause is spaced, not let through."""
    now = [0.0]
    limit = RateLimit(15, lambda s: now.__setitem__(0, now[0] + s), lambda: now[0])
    sent = []
    for i in range(60):
        if i % 20 == 0:
            now[0] += 5.0
        limit.wait()
        sent.append(now[0])
    assert max(sum(1 for t in sent if start <= t < start + 1.0) for start in sent) <= 15
    assert min(b - a for a, b in itertools.pairwise(sent)) >= 1 / 15 - 1e-9
