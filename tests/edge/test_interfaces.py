"""The edge answers alike through granian's RSGI and through plain ASGI; a worker replaced
(its hours served, or its memory over a bound) hands over without a request refused."""

import os
import subprocess
import time

import httpx
import pytest

from edge.web.http import Request
from tests.conftest import BIN, children, edge_process, free_port, wait_http
from tests.edge.conftest import issue_key


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
def test_both_interfaces_serve_pages_budgets_and_problems(home, interface) -> None:
    with edge_process(home, interface=interface) as base:
        sent = time.monotonic()
        first = httpx.get(base + "/api/v1/chains?limit=3", headers={"X-Request-Id": "mine-1"})
        again = httpx.get(base + "/api/v1/chains?limit=3")
        gap = time.monotonic() - sent
        bad = httpx.get(base + "/api/v3/chains?limit=0")
    assert first.status_code == 200 and first.headers["x-request-id"] == "mine-1"
    assert [item["slug"] for item in first.json()["items"]] == ["chain-00", "chain-01", "chain-02"]
    assert again.content == first.content
    # /chains costs 10 CU, one unit of the keyless burst of 20, counted for the socket's peer.
    # The burst refills 300 units a minute, one per 0.2 s: the second call finds 18 left unless
    # the two calls were at least 0.2 s apart (a loaded machine), when a unit came back.
    assert first.headers["x-ratelimit-remaining"] == "19"
    assert again.headers["x-ratelimit-remaining"] == "18" or (
        gap >= 0.2 and again.headers["x-ratelimit-remaining"] == "19")
    assert first.headers["ratelimit-policy"] == '"keyless";q=300;w=60;burst=20'
    assert bad.status_code == 400 and bad.json()["param"] == "limit"
    assert bad.headers["content-type"] == "application/problem+json"
    assert bad.headers["deprecation"] == "@1790467200"


def test_the_peer_is_the_address_without_its_port() -> None:
    def peer(client):
        return Request("GET", "/", "", {}, client).peer

    assert peer("127.0.0.1:48214") == "127.0.0.1"
    assert peer("[2001:db8::7]:443") == "2001:db8::7"
    assert peer("10.0.0.9") == "10.0.0.9"
    assert peer(None) is None


def _workers(server: int) -> set[int]:
    """The worker processes `server` started (not its other children, such as
    multiprocessing's resource tracker)."""
    return set(children(server, "spawn_main"))


@pytest.mark.stack(seconds=36)
def test_a_worker_over_its_memory_bound_is_replaced_while_every_request_is_answered(home):
    key = issue_key(home, "internal")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # Every worker is over a bound of 1 MB: each is replaced once its memory is read.
    server = subprocess.Popen(
        [str(BIN / "chaintape"), "serve", "--port", str(port), "--worker-max-rss-mb", "1"],
        env={**os.environ, "CHAINTAPE_HOME": str(home)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        wait_http(base + "/api/v1/status")
        seen: set[int] = set()
        statuses: list[int] = []
        deadline = time.monotonic() + 120
        # Until a second worker has taken over and the first is gone, a request on a fresh
        # connection every 50 ms.
        while len(seen) < 2 or len(_workers(server.pid) & seen) > 1:
            assert time.monotonic() < deadline, "no worker was replaced"
            seen |= _workers(server.pid)
            statuses.append(httpx.get(base + "/api/v1/chains?limit=1",
                                      headers={"X-API-Key": key}, timeout=10).status_code)
            time.sleep(0.05)
    finally:
        server.terminate()
        server.wait(30)
    assert len(statuses) > 20 and set(statuses) == {200}
