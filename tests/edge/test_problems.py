"""Problem documents, request ids, versioning and failures of the upstreams, over a socket."""

import os
import signal
import socket
from datetime import UTC, datetime, timedelta

import httpx
import orjson
import polars as pl
import pytest

from core.store import S3Store
from publish.cursor import Cursor, default_signer
from publish.writer import PagedList, Publisher
from tests.conftest import edge_process, until
from tests.edge.conftest import AS_OF, chain_record, publish_chains

pytestmark = pytest.mark.cost(seconds=18)

PROBLEM_KEYS = {"type", "title", "status", "code", "detail", "request_id"}


def problem(answer: httpx.Response, status: int, code: str) -> dict:
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert set(body) >= PROBLEM_KEYS and body["code"] == code and body["status"] == status
    assert body["type"].endswith("/" + code) and body["request_id"] == answer.headers["x-request-id"]
    return body


def test_request_ids_are_echoed_only_when_they_follow_the_rule(shared_edge) -> None:
    mine = "abc-DEF_123"
    assert httpx.get(shared_edge + "/api/v1/chains", headers={"X-Request-Id": mine}).headers[
        "x-request-id"] == mine
    for bad in ("a" * 65, "has space", "semi;colon"):
        given = httpx.get(shared_edge + "/api/v1/nope", headers={"X-Request-Id": bad})
        assert given.headers["x-request-id"] != bad
        assert problem(given, 404, "not_found")["request_id"] == given.headers["x-request-id"]


@pytest.mark.parametrize("query,param", [
    ("limit=0", "limit"), ("limit=101", "limit"), ("limit=ten", "limit"), ("limit=1&limit=2", "limit"),
    ("cursor=" + "c" * 513, "cursor"), ("cursor=forged", "cursor"),
])
def test_bad_parameters_are_400_naming_the_parameter(shared_edge, query, param) -> None:
    body = problem(httpx.get(f"{shared_edge}/api/v1/chains?{query}"), 400, "invalid_param")
    assert body["param"] == param


def test_former_prefix_answers_the_same_and_says_it_is_deprecated(shared_edge) -> None:
    now = httpx.get(shared_edge + "/api/v1/chains?limit=3").json()
    old = httpx.get(shared_edge + "/api/v3/chains?limit=3")
    assert old.json()["items"] == now["items"]
    assert old.headers["deprecation"] == "@1790467200"
    assert old.headers["link"] == '</api/v1/chains>; rel="successor-version"'
    assert "deprecation" not in httpx.get(shared_edge + "/api/v1/chains").headers


def test_oracle_routes_answer_errors_in_plain_text(shared_edge) -> None:
    answer = httpx.get(shared_edge + "/v2/no/such/route")
    assert answer.status_code == 404 and answer.headers["content-type"].startswith("text/plain")
    assert "x-request-id" in answer.headers


def test_a_broken_snapshot_is_500_quoting_the_request_id_without_a_trace(tmp_path) -> None:
    publish_chains(tmp_path, 3, config=False)
    with edge_process(tmp_path) as base:
        answer = httpx.get(base + "/api/v1/config", headers={"X-Request-Id": "rid-500"})
        body = problem(answer, 500, "internal")
        assert "rid-500" in body["detail"] and "Traceback" not in answer.text
        assert httpx.get(base + "/api/v1/chains").status_code == 200


def test_no_snapshot_is_503_and_status_says_unavailable(tmp_path) -> None:
    with edge_process(tmp_path) as base:
        problem(httpx.get(base + "/api/v1/chains"), 503, "upstream_unavailable")
        status = httpx.get(base + "/api/v1/status").json()
        assert status["status"] == "unavailable" and status["snapshot"] is None


def test_status_says_stale_when_the_watermark_trails_the_clock_too_far(tmp_path) -> None:
    publish_chains(tmp_path, count=3)
    with edge_process(tmp_path) as base:
        old = httpx.get(base + "/api/v1/status").json()
        fresh_as_of = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=30)
        publish_chains(tmp_path, count=3, as_of=fresh_as_of)
        fresh = until(lambda: (now := httpx.get(base + "/api/v1/status").json())["snapshot"][
            "as_of"] != old["snapshot"]["as_of"] and now, 20, "the fresh snapshot served",
            every=0.3)
    # Dated 2026-11-20: days behind the clock, past the two minutes allowed.
    assert old["status"] == "stale" and old["watermark"]["stale"] is True
    assert old["watermark"]["trails_now_seconds"] > 5 * 86_400
    assert old["watermark"]["stale_after_seconds"] == 120
    assert fresh["status"] == "ok" and fresh["watermark"]["stale"] is False
    trails = fresh["watermark"]["trails_now_seconds"]
    assert 30 <= trails < 60
    # Each chain trails the clock by the watermark's lag plus its own (0, 1 and 2 seconds).
    lags = [c["data_lag_seconds"] - trails for c in fresh["chains"]]
    assert all(abs(lag - own) <= 0.11 for lag, own in zip(lags, [0, 1, 2], strict=True))


def test_status_reports_snapshot_age_as_of_and_chain_lag(shared_edge) -> None:
    status = httpx.get(shared_edge + "/api/v1/status").json()
    assert status["status"] == "ok" and status["snapshot"]["as_of"] == "2026-11-20T00:00:00Z"
    assert status["snapshot"]["age_seconds"] >= 0
    assert [c["block_lag_seconds"] for c in status["chains"][:3]] == [0, 1, 2]
    assert status["upstreams"]["object_store"]["healthy"] is True


def _publish_s3(count: int) -> str:
    records = [chain_record(i) for i in range(count)]
    frame = pl.DataFrame({"chain_id": [r["chain_id"] for r in records],
                          "slug": [r["slug"] for r in records],
                          "item": [orjson.dumps(r).decode() for r in records]})
    manifest = Publisher(S3Store("edge-upstream"), default_signer()).publish(
        AS_OF, [PagedList("chains", frame, ("chain_id", "slug"))], {"config": {}})
    return manifest.snapshot_id


def test_a_store_that_stops_answering_keeps_the_snapshot_and_times_out_old_cursors(
        tmp_path, s3_env, monkeypatch) -> None:
    import boto3

    monkeypatch.setenv("CHAINTAPE_HOME", str(tmp_path))
    boto3.client("s3").create_bucket(Bucket="edge-upstream")
    older = _publish_s3(60)
    _publish_s3(60)
    # A cursor into the older snapshot, which this edge has never loaded.
    old_cursor = default_signer().encode(Cursor(older, "chains", 5))
    with edge_process(tmp_path, CHAINTAPE_STORE="s3://edge-upstream",
                      CHAINTAPE_POLL_SECONDS="0.2", CHAINTAPE_UPSTREAM_TIMEOUT_SECONDS="1") as base:
        moto = _moto_pid(s3_env)
        os.kill(moto, signal.SIGSTOP)
        try:
            served = httpx.get(base + "/api/v1/chains?limit=5", timeout=10)
            assert served.status_code == 200 and len(served.json()["items"]) == 5
            pinned = httpx.get(base + f"/api/v1/chains?cursor={old_cursor}", timeout=10)
            problem(pinned, 504, "upstream_timeout")
            status = until(lambda: (doc := httpx.get(base + "/api/v1/status", timeout=10)
                                    .json())["status"] == "degraded" and doc, 20,
                           "the store marked unhealthy")
            assert status["upstreams"]["object_store"]["healthy"] is False
        finally:
            os.kill(moto, signal.SIGCONT)
        resumed = httpx.get(base + f"/api/v1/chains?cursor={old_cursor}", timeout=10)
        assert resumed.status_code == 200 and resumed.json()["items"][0]["slug"] == "chain-05"


def _moto_pid(endpoint: str) -> int:
    port = endpoint.rsplit(":", 1)[1]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if any(a.endswith(b"moto_server") for a in args) and port.encode() in args:
                return int(pid)
    raise LookupError("moto server not found")


def raw_exchange(base: str, head: bytes, timeout: float = 5.0) -> tuple[bytes, bytes]:
    """Send a request head as bytes over a socket; the response's status line and headers,
    and its body (read to the close)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as conn:
        conn.sendall(head)
        received = b""
        while True:
            try:
                data = conn.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            received += data
    status_and_headers, _, body = received.partition(b"\r\n\r\n")
    return status_and_headers, body


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
def test_a_body_over_its_limit_is_refused_before_upload(home, interface) -> None:
    with edge_process(home, interface) as base:
        head, body = raw_exchange(base, b"POST /api/v1/pairs/batch HTTP/1.1\r\nHost: x\r\n"
                                  b"Content-Type: application/json\r\nContent-Length: 999999999\r\n"
                                  b"Expect: 100-continue\r\nConnection: close\r\n\r\n")
        # The refusal comes first: no "100 Continue", and never an upload.
        assert head.startswith(b"HTTP/1.1 413"), head
        assert b"100 Continue" not in head + body
        doc = orjson.loads(body)
        assert (doc["status"], doc["code"], doc["param"]) == (413, "invalid_param", "body")
        chunked = httpx.post(base + "/api/v1/pairs/batch",
                             content=iter([b"{" + b" " * 40_000, b" " * 40_000 + b"}"]))
        assert (chunked.status_code, chunked.json()["param"]) == (413, "body")


def test_long_urls_and_many_headers_within_the_http_parsers_limits_are_served(shared_edge) -> None:
    # The edge refuses nothing the HTTP parser accepts: 80 header fields, a 20 KB header and a
    # 50 KB query string (of a parameter /chains does not take) are answered, with a body.
    many = httpx.get(shared_edge + "/api/v1/chains?limit=1", headers={f"x-h{i}": "v" for i in range(80)})
    large = httpx.get(shared_edge + "/api/v1/chains?limit=1", headers={"x-large": "v" * 20_000})
    for answer in (many, large):
        assert answer.status_code == 200 and len(answer.json()["items"]) == 1
    head, body = raw_exchange(shared_edge, b"GET /api/v1/chains?limit=1&q=" + b"a" * (50 * 1024)
                              + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and len(orjson.loads(body)["items"]) == 1


def test_a_key_that_is_sent_but_unreadable_is_401_never_keyless(shared_edge) -> None:
    for header in (b"X-API-Key: ct_\xc3\xa9\xff", b"Authorization: Bearer \xe2\x82\xac", b"X-API-Key: "):
        head, body = raw_exchange(shared_edge, b"GET /api/v1/chains HTTP/1.1\r\nHost: x\r\n" + header
                                  + b"\r\nConnection: close\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401"), (header, head)
        assert orjson.loads(body)["code"] == "invalid_api_key"
    spaced = httpx.get(shared_edge + "/api/v1/chains", headers={"X-API-Key": "ct_ a"})
    assert problem(spaced, 401, "invalid_api_key")
