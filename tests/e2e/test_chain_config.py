"""Simulate -> materialise (with blocking checks) -> publish -> serve -> call over HTTP."""

import shutil
from datetime import timedelta

import httpx
import polars as pl
import pytest

from sources.lake import LakeWriter
from tests.conftest import SMALL, edge_process, run_cli, until
from tests.edge.conftest import issue_key


def test_config_has_one_record_per_chain_agreeing_with_the_lake(home, edge):
    body = httpx.get(f"{edge}/api/v1/config").json()
    lake = LakeWriter(home / "lake")
    chains = lake.read("chains")
    assert sorted(c["slug"] for c in body["chains"]) == sorted(chains["slug"])
    as_of = lake.progress().watermark
    swaps = lake.read("swaps").filter(
        pl.col("block_time").is_between(as_of - timedelta(days=1), as_of, closed="right"))
    per_chain = dict(swaps.group_by("chain_id").len().iter_rows())
    pairs = dict(lake.read("pairs").group_by("chain_id").len().iter_rows())
    for record in body["chains"]:
        assert record["txns_24h"] == per_chain.get(record["chain_id"], 0)
        assert record["pairs"] == pairs[record["chain_id"]]
        assert record["scams_total"] == record["scams_on_pool"] + record["scams_inherited"]
    by_slug = {c["slug"]: c for c in body["chains"]}
    assert by_slug["tron"]["metrics_stale"] and by_slug["tron"]["syncing"]
    assert not by_slug["sui"]["syncing"] and by_slug["sui"]["metrics_stale"]
    assert body["timeframes"] == ["m5", "m15", "m30", "h1", "h6", "h24"]
    assert SMALL.chains == len(body["chains"])


def test_chains_pages_follow_their_cursors_and_refuse_forged_ones(edge):
    first = httpx.get(f"{edge}/api/v1/chains", params={"limit": 4})
    assert first.status_code == 200 and len(first.json()["items"]) == 4
    second = httpx.get(f"{edge}/api/v1/chains", params={"cursor": first.json()["next_cursor"],
                                                         "limit": 4}).json()
    assert len(second["items"]) == 2 and second["next_cursor"] is None
    slugs = [c["slug"] for c in first.json()["items"] + second["items"]]
    assert len(set(slugs)) == 6
    forged = httpx.get(f"{edge}/api/v1/chains", params={"cursor": "abc.def"})
    assert forged.status_code == 400
    assert forged.json()["code"] == "invalid_param" and forged.json()["param"] == "cursor"
    bad_limit = httpx.get(f"{edge}/api/v1/chains", params={"limit": 0})
    assert bad_limit.status_code == 400 and bad_limit.json()["param"] == "limit"


def test_every_response_carries_a_request_id_and_unknown_routes_are_problems(edge):
    mine = httpx.get(f"{edge}/api/v1/config", headers={"X-Request-Id": "my-id_1"})
    assert mine.headers["x-request-id"] == "my-id_1"
    ugly = httpx.get(f"{edge}/api/v1/config", headers={"X-Request-Id": "not ok!"})
    assert ugly.headers["x-request-id"] != "not ok!" and len(ugly.headers["x-request-id"]) > 8
    missing = httpx.get(f"{edge}/api/v1/no-such-thing")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    doc = missing.json()
    assert doc["code"] == "not_found" and doc["request_id"] == missing.headers["x-request-id"]
    assert doc["type"].endswith("/not_found")


def test_the_edge_follows_latest_as_a_new_snapshot_lands(home, tmp_path):
    # A copy: the shared home's snapshot stays the one every other test reads.
    mine = tmp_path / "home"
    shutil.copytree(home, mine, ignore=shutil.ignore_patterns("edge-parts"))
    with edge_process(mine, CHAINTAPE_POLL_SECONDS="0.2") as edge:
        before = httpx.get(f"{edge}/api/v1/config").headers["x-snapshot-id"]
        old_cursor = httpx.get(f"{edge}/api/v1/chains", params={"limit": 2}).json()["next_cursor"]
        assert run_cli(["publish"], mine).returncode == 0
        until(lambda: httpx.get(f"{edge}/api/v1/config").headers["x-snapshot-id"] != before,
              10, "the new snapshot served", every=0.2)
        pinned = httpx.get(f"{edge}/api/v1/chains", params={"cursor": old_cursor, "limit": 2})
    assert pinned.status_code == 200 and pinned.headers["x-snapshot-id"] == before


def test_no_snapshot_at_all_is_a_503(tmp_path):
    with edge_process(tmp_path) as base:
        answer = httpx.get(f"{base}/api/v1/config")
        assert answer.status_code == 503 and answer.json()["code"] == "upstream_unavailable"


def test_every_pair_is_served_with_windows_that_agree_with_the_raw_swaps(home, edge):
    lake = LakeWriter(home / "lake")
    pairs = lake.read("pairs")
    as_of = lake.progress().watermark
    swaps = lake.read("swaps").filter(pl.col("block_time") > as_of - timedelta(hours=1),
                                      pl.col("block_time") <= as_of)
    busiest = swaps.group_by("chain_id", "pair").agg(
        n=pl.len(), makers=pl.col("maker").n_unique()).sort("n", "pair", descending=True).row(
        0, named=True)
    slugs = dict(lake.read("chains").select("chain_id", "slug").iter_rows())
    row = httpx.get(f"{edge}/api/v1/chains/{busiest['chain_id']}/pairs/{busiest['pair']}").json()
    assert row["network"] == {"slug": slugs[busiest["chain_id"]], "chain_id": busiest["chain_id"]}
    h1 = row["windows"]["h1"]
    assert h1["txns"]["buys"] + h1["txns"]["sells"] == busiest["n"]
    assert row["txn"]["h1"]["buys"] == h1["txns"]["buys"]
    assert h1["buy_volume_usd"] + h1["sell_volume_usd"] == pytest.approx(h1["volume_usd"])
    assert max(h1["buyers"], h1["sellers"]) <= busiest["makers"] <= h1["buyers"] + h1["sellers"]
    # One batch of every pair of the lake (50 at a time) finds every one of them.
    wanted = [{"chain": str(c), "address": a} for c, a in pairs.select("chain_id", "address")
              .iter_rows()]
    key = {"X-API-Key": issue_key(home, "internal")}
    found = 0
    for start in range(0, len(wanted), 50):
        answer = httpx.post(f"{edge}/api/v1/pairs/batch", json={"items": wanted[start:start + 50]},
                            headers=key)
        found += sum(item["found"] for item in answer.json()["items"])
    assert found == pairs.height
