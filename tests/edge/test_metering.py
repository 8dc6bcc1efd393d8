"""Token buckets and client addresses: by hand with a fake clock, then over real sockets."""

import math
import time

import httpx
import redis

from edge.billing.metering import LocalMeter
from edge.billing.plans import KEYLESS, PLANS, units
from edge.clients import client_address, trusted_networks
from tests.conftest import edge_process
from tests.edge.conftest import first_refusal

PROXY = trusted_networks("127.0.0.1,10.0.0.0/8")


def test_units_are_tens_of_cu_never_below_one() -> None:
    assert [units(c) for c in (0, 10, 20, 60, 100)] == [1, 1, 2, 6, 10]


def test_bucket_bursts_twenty_then_refills_five_a_second() -> None:
    now = [0.0]
    meter = LocalMeter(clock=lambda: now[0])
    verdicts = [meter.take_now("1.2.3.4", KEYLESS, 1) for _ in range(21)]
    assert [v.allowed for v in verdicts] == [True] * 20 + [False]
    assert verdicts[0].remaining == 19 and verdicts[19].remaining == 0
    # 300 a minute is 5 units a second: a 6-unit call waits 1.2 s, so Retry-After is 2.
    assert meter.take_now("1.2.3.4", KEYLESS, 6).retry_after == 2
    now[0] = 0.4
    two = meter.take_now("1.2.3.4", KEYLESS, 2)
    assert two.allowed and two.remaining == 0
    assert meter.take_now("5.6.7.8", KEYLESS, 1).allowed
    pro = meter.take_now("1.2.3.4", PLANS["pro"], 1)
    assert pro.allowed and pro.remaining == 199


def test_headers_follow_the_spec_syntax() -> None:
    verdict = LocalMeter(clock=lambda: 0.0).take_now("c", KEYLESS, 3)
    assert dict(verdict.headers()) == {
        "ratelimit-policy": '"keyless";q=300;w=60;burst=20',
        "ratelimit": '"keyless";r=17;t=1',
        "x-ratelimit-limit": "300", "x-ratelimit-remaining": "17"}


def test_client_address_ipv4_alone_ipv6_by_64_and_proxies() -> None:
    assert client_address("203.0.113.7", None, ()) == "203.0.113.7"
    assert client_address("2001:db8:1:2:aaaa::1", None, ()) == "2001:db8:1:2::/64"
    assert client_address("::ffff:203.0.113.7", None, ()) == "203.0.113.7"
    assert client_address("203.0.113.7", "198.51.100.1", ()) == "203.0.113.7"
    assert client_address("127.0.0.1", "198.51.100.1, 10.1.1.1", PROXY) == "198.51.100.1"
    assert client_address("127.0.0.1", "198.51.100.9, 198.51.100.1", PROXY) == "198.51.100.1"
    assert client_address("127.0.0.1", "2001:db8::5", PROXY) == "2001:db8::/64"


def test_keyless_budget_over_a_socket(edge) -> None:
    first = httpx.get(edge + "/api/v1/.well-known/x402")
    assert first.status_code == 200
    assert first.headers["ratelimit-policy"] == '"keyless";q=300;w=60;burst=20'
    assert first.headers["x-ratelimit-remaining"] == "18"  # 20 CU is two units
    started = time.monotonic()
    spent, limited = first_refusal(edge, "/api/v1/chains?limit=1")
    # 18 units left; each call takes one, and 5 come back every second the calls take.
    assert 18 <= spent <= 19 + math.ceil(5 * (time.monotonic() - started))
    # The refused call itself: one made after it may already find a unit come back (200 ms).
    assert limited is not None
    assert limited.headers["content-type"] == "application/problem+json"
    assert limited.json()["code"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.headers["ratelimit"].startswith('"keyless";r=0;')
    assert "payment-required" in limited.headers


def test_keyless_pages_are_capped_at_fifty(edge) -> None:
    assert len(httpx.get(edge + "/api/v1/chains?limit=100").json()["items"]) == 50


def _left_after_dry(base: str, forwarded_for: str) -> tuple[int, float]:
    """Spend a bucket dry from one address, then one call from `forwarded_for`: the units its
    bucket has left after it, and the seconds since the bucket ran dry."""
    first_refusal(base, headers={"X-Forwarded-For": "2001:db8::1"})
    dry = time.monotonic()
    answer = httpx.get(base + "/api/v1/chains", headers={"X-Forwarded-For": forwarded_for})
    return int(answer.headers["x-ratelimit-remaining"]), time.monotonic() - dry


def test_forwarded_for_counts_only_behind_a_trusted_proxy(home) -> None:
    # The call shares the dry bucket when it counts as the same client: it finds only the units
    # that came back since (5 a second), never the 19 a bucket of its own would have left.
    def shared(left: int, since: float) -> bool:
        return left <= min(18, 5 * since)

    with edge_process(home, CHAINTAPE_TRUSTED_PROXIES="127.0.0.1") as base:
        assert shared(*_left_after_dry(base, "2001:db8::2"))  # the same /64
        assert _left_after_dry(base, "2001:db8:0:1::1")[0] == 19  # another /64
    with edge_process(home) as base:
        assert shared(*_left_after_dry(base, "198.51.100.2"))  # not trusted: the socket's


def test_redis_budget_is_shared_by_two_edges(home) -> None:
    url = "redis://127.0.0.1:6379/15"
    redis.Redis.from_url(url).flushdb()
    with edge_process(home, CHAINTAPE_REDIS_URL=url) as one, \
            edge_process(home, CHAINTAPE_REDIS_URL=url) as two:
        assert httpx.get(one + "/api/v1/status").json()["upstreams"]["metering"] == {
            "backend": "redis", "healthy": True}
        with httpx.Client() as client:
            answers = [client.get((one, two)[n % 2] + "/api/v1/chains").status_code
                       for n in range(30)]
        # Alone, each edge would allow 20 in a burst, 40 together; shared, about 20 pass.
        assert answers[:17] == [200] * 17
        assert 17 <= answers.index(429) <= 25
