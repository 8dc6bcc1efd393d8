"""The edge answers alike through granian's RSGI and through plain ASGI."""

import time

import httpx
import pytest

from edge.http import Request
from tests.conftest import edge_process


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
