"""Following LATEST through bad publishes: keep serving, say so, follow the next good one."""

import time

import httpx

from tests.edge.conftest import publish_chains


def status_until(base: str, done, timeout: float = 10.0) -> dict:
    """/status once `done(status)` holds (polled within the keyless budget's 5 calls a second);
    the last status when it never does."""
    deadline = time.monotonic() + timeout
    while True:
        answer = httpx.get(base + "/api/v1/status")
        assert answer.status_code == 200, answer.text
        status = answer.json()
        if done(status) or time.monotonic() > deadline:
            return status
        time.sleep(0.25)


def test_a_bad_publish_is_reported_and_the_next_good_one_followed(home, edge) -> None:
    first = httpx.get(edge + "/api/v1/status").json()
    assert first["status"] == "ok" and first["rejected_snapshot"] is None
    served = first["snapshot"]["id"]
    store = home / "store" / "snapshots"

    (store / "LATEST").write_bytes(b"{torn")
    torn = status_until(edge, lambda s: s["rejected_snapshot"] is not None)
    assert torn["status"] == "degraded" and torn["snapshot"]["id"] == served
    assert torn["rejected_snapshot"]["snapshot_id"] == "snapshots/LATEST"
    assert httpx.get(edge + "/api/v1/chains?limit=2").status_code == 200

    (store / "broken").mkdir()
    (store / "broken" / "manifest.json").write_bytes(b"not json")
    (store / "LATEST").write_bytes(b'{"snapshot_id": "broken"}')
    broken = status_until(edge, lambda s: (s["rejected_snapshot"] or {}).get("snapshot_id")
                          == "broken")
    assert broken["status"] == "degraded" and broken["snapshot"]["id"] == served
    assert len(httpx.get(edge + "/api/v1/chains?limit=3").json()["items"]) == 3

    good = publish_chains(home, count=5)
    after = status_until(edge, lambda s: s["snapshot"]["id"] == good, timeout=2.0)
    assert after["snapshot"]["id"] == good and after["status"] == "ok"
    assert after["rejected_snapshot"] is None
    assert len(httpx.get(edge + "/api/v1/chains?limit=50").json()["items"]) == 5
