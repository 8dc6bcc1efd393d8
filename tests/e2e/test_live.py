"""The live path: an edge serving a snapshot and the live tail past it answers every pair's live
lookups exactly as the next snapshot, made from the same lake, answers them; and a stalled tail
leaves it serving what it has."""

import multiprocessing
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import httpx
import orjson
import polars as pl
import pytest

from core.renewal import RENEWALS, Renewal
from core.store import LocalStore
from pipelines.resources import resources
from publish.reader import LATEST, latest_id, load_snapshot
from publish.tail import TABLES, TAIL, load_tail, read_pointer
from sources.lake import LakeWriter
from sources.simulator.live_market import commit, start
from tail.basis import basis_of
from tail.writer import follow, live_tail
from tests.conftest import BIN, edge_process, run_cli, until
from tests.core.test_renewal import Renewed, exec_stand_in
from tests.e2e.conftest import stop
from tests.e2e.test_incremental import close
from tests.edge.conftest import issue_key

pytestmark = pytest.mark.cost(seconds=70)

END, LIVE_UNTIL = "2026-11-25T12:00:00+00:00", "2026-11-25T12:20:00+00:00"
# What a pair row serves live; the rest of it is the snapshot's.
LIVE_FIELDS = ("txn", "volume", "price_change", "windows", "liquidity_usd", "price_native",
               "last_trade_at", "status")
TOKEN_PRICES = ("price_usd", "price_native")
# What a token row serves from the snapshot (its holders), wherever it appears in the row.
SNAPSHOT_TOKEN_FIELDS = {"holders", "holder_stats", "holders_count"}


def _differences(a: object, b: object, path: str = "", same=close) -> list[str]:
    """Where two decoded rows differ (floats to 1e-9 relative), but for the snapshot's fields
    and a rating score that moves with them."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [path or "/"]
        return [d for k in a if k not in SNAPSHOT_TOKEN_FIELDS
                for d in _differences(a[k], b[k], f"{path}/{k}", same)]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _differences(x, y, f"{path}/{i}", same)]
    return [] if same(a, b) else [path]


def _published_tail(home: Path) -> None:
    """Run `chaintape tail` until it has published the tail past the latest snapshot."""
    store = LocalStore(home / "store")
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    proc = subprocess.Popen([str(BIN / "chaintape"), "tail", "--poll", "0.1"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        until(lambda: (read_pointer(store) or {}).get("snapshot_id") == latest_id(store), 120,
              "a tail")
    finally:
        stop([proc])


@pytest.fixture(scope="module")
def live_home(tmp_path_factory):
    """A small lake published once (at END), then twenty live minutes in the lake and the
    tail past the snapshot published."""
    home = tmp_path_factory.mktemp("live")
    for args in (["simulate", "--chains", "4", "--days", "1", "--swaps", "3000", "--seed", "5",
                  "--end", END], ["materialize"], ["live", "--until", LIVE_UNTIL, "--every", "30"]):
        done = run_cli(args, home)
        assert done.returncode == 0, done.stderr
    _published_tail(home)
    return home


def _pair_views(client: httpx.Client, pairs: list[tuple[int, str]]) -> dict:
    """Each pair's row, newest trades and minute candles (over the last two hours) as served."""
    out = {}
    for chain, pair in pairs:
        base = f"/chains/{chain}/pairs/{pair}"
        row = client.get(base)
        trades = client.get(base + "/trades", params={"limit": 50})
        candles = client.get(base + "/candles", params={"resolution": "1m"})
        assert row.status_code == trades.status_code == candles.status_code == 200
        out[(chain, pair)] = (row.json(), trades.json(), candles.json(),
                              row.headers["x-data-as-of"])
    return out


def test_a_stalled_tail_keeps_the_edge_serving_what_it_has(live_home):
    store = LocalStore(live_home / "store")
    pointer = read_pointer(store)
    tail = load_tail(store, pointer)
    chain, pair = tail.trades.select("chain_id", "pair").row(0)
    objects = {key: store.get(key) for key in store.keys("live/")}
    with edge_process(live_home, CHAINTAPE_LIVE_POLL_SECONDS="0.1") as url, \
            httpx.Client(base_url=url + "/api/v1", timeout=30) as client:
        before = client.get(f"/chains/{chain}/pairs/{pair}")
        assert before.headers["x-data-as-of"] == LIVE_UNTIL
        # A torn pointer, then no tail at all: the edge keeps the tail it has.
        (live_home / "store" / TAIL).write_bytes(b"{torn")
        time.sleep(0.5)
        store.delete(list(objects))
        time.sleep(0.5)
        after = client.get(f"/chains/{chain}/pairs/{pair}")
        status = client.get("/status").json()
    for key, kept in objects.items():
        store.put(key, kept.body, kept.content_type, kept.cache_control)
    assert after.status_code == 200 and after.content == before.content
    assert after.headers["x-data-as-of"] == LIVE_UNTIL
    assert status["live"]["seq"] == tail.seq and status["live"]["serving"]
    assert status["live"]["trails_now_seconds"] > 0


def test_two_edges_over_the_same_store_answer_the_same_bytes(live_home):
    store = LocalStore(live_home / "store")
    tail = load_tail(store, read_pointer(store))
    busiest = (tail.trades.group_by("chain_id", "pair").len().sort("len", "pair")
               .select("chain_id", "pair").rows()[-3:])
    key = issue_key(live_home, "internal")
    with edge_process(live_home, CHAINTAPE_LIVE_POLL_SECONDS="0.1") as one, \
            edge_process(live_home, CHAINTAPE_LIVE_POLL_SECONDS="0.1") as two:
        for chain, pair in busiest:
            for suffix in ("", "/trades?limit=20", "/candles?resolution=5m"):
                path = f"/api/v1/chains/{chain}/pairs/{pair}{suffix}"
                a, b = (httpx.get(base + path, headers={"X-API-Key": key}) for base in (one, two))
                assert a.status_code == b.status_code == 200
                assert a.headers["x-data-as-of"] == b.headers["x-data-as-of"] == LIVE_UNTIL
                assert a.content == b.content, path


# A tail's tables whose values are JSON texts (compared decoded, floats to 1e-9 relative).
JSON_COLUMNS = ("fields", "item", "market", "instances")


def _near(a: object, b: object) -> bool:
    """Equal to 1e-9 relative, or within a millionth (of a dollar): the same window summed in
    another order differs by float remainders, which a sum that nearly cancels (a window's
    volume less what left it since) leaves large relative to what remains."""
    if close(a, b):
        return True
    try:
        return abs(float(a) - float(b)) <= 1e-6  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _decoded(tail) -> dict[str, list[dict]]:
    return {name: [{k: orjson.loads(v) if k in JSON_COLUMNS and v else v for k, v in row.items()}
                   for row in getattr(tail, name).to_dicts()] for name in TABLES}


def test_a_tail_made_from_the_one_before_equals_one_made_whole(live_home, tmp_path,
                                                               monkeypatch):
    """After each live commit, a tail that reads only what was committed since the last one
    equals the tail made from everything since the snapshot; a reorg, which writes again what
    it took, and an oracle update landing at a time it already priced make it read all of it
    again."""
    home = tmp_path / "home"
    shutil.copytree(live_home, home)
    monkeypatch.setenv("CHAINTAPE_HOME", str(home))
    warehouse, store = resources()["warehouse"], LocalStore(home / "store")
    lake = LakeWriter(home / "lake", keep_open=True)
    market = start(lake)
    basis = basis_of(store, latest_id(store))
    earlier, wholes = None, []
    for step in range(7):
        if step == 3:
            # A reorg of the newest swap's block: the canonical block holds no swap.
            chain, block = (lake.scan("swaps").sort("block_time").tail(1)
                            .select("chain_id", "block_number").collect().row(0))
            lake.replace("swaps", lake.scan("swaps").head(0).collect(),
                         f"chain_id = {chain} AND block_number >= {block}")
        if step == 5:
            assert earlier is not None
            update = (lake.scan("oracle_updates").sort("publish_time").tail(1).collect()
                      .with_columns(publish_time=pl.lit(int(earlier.as_of.timestamp()) - 1,
                                                        pl.Int64),
                                    price=pl.col("price") * 2)
                      .with_columns(prev_publish_time=pl.col("publish_time") - 1))
            lake.append("oracle_updates", update)
        commit(lake, market, market.position.at + 30)
        pinned = lake.pinned()
        whole, _ = live_tail(pinned, warehouse, basis, step, 0.0)
        tail, earlier = live_tail(pinned, warehouse, basis, step, 0.0, earlier)
        wholes.append(earlier.whole)
        assert tail.chains == whole.chains and tail.as_of == whole.as_of
        assert tail.trades.height > 0
        one, other = _decoded(tail), _decoded(whole)
        for name in TABLES:
            assert _differences(one[name], other[name], same=_near) == [], (step, name)
    assert wholes == [True, False, False, True, False, True, False]


def _wallet_pages(client: httpx.Client, wallets: list[tuple[int, str]]) -> dict:
    """Each wallet's first page of trades as served (and the page after it, by its cursor)."""
    out = {}
    for chain, wallet in wallets:
        base = f"/chains/{chain}/wallets/{wallet}/trades"
        first = client.get(base, params={"limit": 5})
        assert first.status_code == 200, first.text
        # Cursors name their snapshot: the items are compared, not the cursors.
        out[(chain, wallet)] = {"items": first.json()["items"], "after": []}
        cursor = first.json()["next_cursor"]
        if cursor is not None:
            after = client.get(base, params={"limit": 5, "cursor": cursor})
            assert after.status_code == 200
            out[(chain, wallet)]["after"] = after.json()["items"]
    return out


def _positions(client: httpx.Client, wallets: list[tuple[int, str]]) -> dict:
    """Each wallet's positions as served, with the instant they are marked as of."""
    out = {}
    for chain, wallet in wallets:
        got = client.get(f"/chains/{chain}/wallets/{wallet}/positions")
        assert got.status_code == 200, got.text
        out[(chain, wallet)] = (got.json()["items"], got.headers["x-data-as-of"])
    return out


def _iso(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))


@pytest.mark.stack(seconds=60)
def test_live_answers_equal_the_next_snapshot_for_every_pair(live_home):
    store = LocalStore(live_home / "store")
    first = latest_id(store)
    tail = load_tail(store, read_pointer(store))
    assert tail.snapshot_id == first and tail.as_of.isoformat() == LIVE_UNTIL
    # The twenty minutes hold swaps: a test of the live path that reads none would prove
    # nothing.
    swaps = tail.trades.filter(tail.trades["tx_type"].is_in(["buy", "sell"]))
    assert swaps.height > 10
    snapshot = load_snapshot(store, first)
    rows = snapshot.tables["pairs"]
    pairs = [(c, p) for c, p, item in rows.select("chain_id", "pair", "item").iter_rows()
             if not orjson.loads(item)["prop_data"]["is_perp"]]
    traded = {(c, p) for c, p in swaps.select("chain_id", "pair").iter_rows()}
    with edge_process(live_home, CHAINTAPE_POLL_SECONDS="0.2",
                      CHAINTAPE_LIVE_POLL_SECONDS="0.1") as url, \
            httpx.Client(base_url=url + "/api/v1", timeout=30,
                         headers={"X-API-Key": issue_key(live_home, "internal")}) as client:
        live = _pair_views(client, pairs)
        assert {v[3] for v in live.values()} == {LIVE_UNTIL}
        tokens = snapshot.tables["tokens"].select("chain_id", "address").rows()
        live_tokens = {key: client.get(f"/chains/{key[0]}/tokens/{key[1]}") for key in tokens}
        batch = client.post("/tokens/batch", json={"items": [
            {"chain": str(c), "address": a} for c, a in tokens[:20]]})
        assert batch.headers["x-data-as-of"] == LIVE_UNTIL
        assert [i["token"] for i in batch.json()["items"]] == [
            live_tokens[k].json() for k in tokens[:20]]
        registry = snapshot.tables["registry"]["token_id"].to_list()
        live_registry = {t: client.get(f"/tokens/{t}") for t in registry}
        # The wallets that traded in the tail: their first page of trades, live.
        makers = sorted(tail.wallet_trades.select("chain_id", "wallet").unique().rows())
        live_wallets = _wallet_pages(client, makers)
        # Wallets holding open positions, some that did not trade in the tail (their books
        # are the same at its watermark: marked at its prices) and some that did (their books
        # moved: marked at the snapshot's, as of it).
        held = (snapshot.tables["wallet_positions"].filter(pl.col("is_open"))
                .select("chain_id", "wallet").unique().sort("chain_id", "wallet").rows())
        quiet = [w for w in held if w not in set(makers)][:40]
        busy = [w for w in held if w in set(makers)][:5]
        live_positions = _positions(client, quiet + busy)
        # The next snapshot, from the same lake: the edge follows it, and the tail, built on
        # the first, adds nothing to it.
        done = run_cli(["materialize"], live_home)
        assert done.returncode == 0, done.stderr
        second = latest_id(store)
        assert second != first
        until(lambda: client.get("/status").json()["snapshot"]["id"] == second, 30,
              "the edge on the next snapshot")
        assert client.get("/status").json()["live"]["serving"] is False
        later = _pair_views(client, pairs)
        later_tokens = {key: client.get(f"/chains/{key[0]}/tokens/{key[1]}") for key in tokens}
        later_registry = {t: client.get(f"/tokens/{t}") for t in registry}
        later_wallets = _wallet_pages(client, makers)
        later_positions = _positions(client, quiet)
    assert {v[3] for v in later.values()} == {"2026-11-25T12:20:00Z"}
    assert {r.headers["x-data-as-of"] for r in live_tokens.values()} == {LIVE_UNTIL}
    differing = {}
    for key in tokens:
        row, row2 = live_tokens[key].json(), later_tokens[key].json()
        diff = _differences(row, row2)
        # The score weighs the holders part in: it may move only when that part did.
        if row["rating"]["holders"] != row2["rating"]["holders"]:
            diff = [d for d in diff if d not in ("/score", "/rating/score")]
        if diff:
            differing[key] = diff
    assert differing == {}
    # A registry token's market and instances are its instances' live ones.
    assert registry and {r.status_code for r in live_registry.values()} == {200}
    assert {t: d for t in registry
            if (d := _differences(live_registry[t].json(), later_registry[t].json()))} == {}
    first_tokens = dict(zip(tokens, snapshot.tables["tokens"]["item"].to_list(), strict=True))
    assert sum(orjson.loads(first_tokens[k])["windows"] != live_tokens[k].json()["windows"]
               for k in tokens) > 0
    moved = 0
    for key in pairs:
        (row, trades, candles, _), (row2, trades2, candles2, _) = live[key], later[key]
        for field in LIVE_FIELDS:
            assert close(row[field], row2[field]), (key, field, row[field], row2[field])
        for token, token2 in zip(row["tokens"], row2["tokens"], strict=True):
            for field in TOKEN_PRICES:
                assert close(token[field], token2[field]), (key, field)
        assert close(trades["items"], trades2["items"]), key
        assert close(candles, candles2), key
        first_row = orjson.loads(rows.filter(rows["pair"] == key[1])["item"][0])
        moved += key in traded and first_row["txn"] != row["txn"]
    # The live rows are not the first snapshot's: the pairs that traded moved.
    assert moved >= len(traded & set(pairs)) // 2 > 0
    # A wallet's newest trades live are the next snapshot's, the tail's among them.
    assert len(makers) > 5
    assert {k: p for k, p in live_wallets.items() if not close(p, later_wallets[k])} == {}
    newest = {(c, w): ts for c, w, ts in tail.wallet_trades.group_by("chain_id", "wallet")
              .agg(pl.col("ts").max()).rows()}
    assert all(page["items"][0]["timestamp"][:19] == _iso(newest[k])[:19]
               for k, page in live_wallets.items())

    # A quiet wallet's positions live, marked at the tail's prices, are the next snapshot's,
    # marked by the batch at the same instant (but the token's score, which weighs the
    # holders in); a busy one's are the snapshot's, as of it.
    assert len(quiet) > 10 and busy
    assert {at for _, at in map(live_positions.get, quiet)} == {LIVE_UNTIL}
    assert {at for _, at in map(live_positions.get, busy)} == {
        snapshot.manifest.as_of[:19] + "Z"}

    def unscored(served: tuple[list[dict], str]) -> list[dict]:
        return [{k: v for k, v in p.items() if k != "token_score"} for p in served[0]]

    assert {w: d for w in quiet if (d := _differences(unscored(live_positions[w]),
                                                      unscored(later_positions[w])))} == {}
    # Prices moved in the twenty minutes: some open holding is marked at a price the first
    # snapshot's token rows do not give.
    first_prices = dict(zip(snapshot.tables["tokens"].select("chain_id", "address").rows(),
                            snapshot.tables["tokens"]["price_usd"].to_list(), strict=True))
    assert any(p["is_open"] and not close(p["mark_usd"],
                                          first_prices[(w[0], p["token_address"])])
               for w in quiet for p in live_positions[w][0])


def test_a_torn_latest_leaves_the_tail_following_the_last_good_snapshot(live_home, tmp_path,
                                                                        monkeypatch):
    """A bad publish (LATEST torn) does not stop the live tail: it goes on publishing tails on
    the last good snapshot as the lake moves, and follows LATEST again once it is whole."""
    home = tmp_path / "home"
    shutil.copytree(live_home, home, ignore=shutil.ignore_patterns("edge-parts"))
    monkeypatch.setenv("CHAINTAPE_HOME", str(home))
    warehouse, store = resources()["warehouse"], LocalStore(home / "store")
    lake = LakeWriter(home / "lake", keep_open=True)
    market = start(lake)
    good = latest_id(store)
    latest = home / "store" / LATEST
    whole = latest.read_bytes()
    done = threading.Event()
    following = threading.Thread(target=follow, args=(lake, warehouse, store, 0.05, done.is_set))
    seen = read_pointer(store)["seq"]
    following.start()
    try:
        until(lambda: read_pointer(store)["seq"] > seen, 120, "a first tail")
        latest.write_bytes(b'{"snapshot_id": ')
        for _ in range(2):
            commit(lake, market, market.position.at + 30)
            until(lambda: _tail_at(store, lake), 120, "a tail past the new mark")
            assert following.is_alive()
        pointer = read_pointer(store)
        assert pointer["snapshot_id"] == good and pointer["seq"] >= seen + 2
        latest.write_bytes(whole)
        commit(lake, market, market.position.at + 30)
        until(lambda: _tail_at(store, lake), 120, "a tail once LATEST is whole")
    finally:
        done.set()
        following.join(60)
    assert not following.is_alive()


def test_a_tail_renewed_in_place_publishes_first_and_lets_its_preparing_process_go(
        live_home, tmp_path, monkeypatch):
    """A tail writer always over its allowance is renewed at its first look after a tail: the
    tail it was making is published, and the process that prepared its snapshot has ended
    (none is left behind the new image)."""
    home = tmp_path / "home"
    shutil.copytree(live_home, home, ignore=shutil.ignore_patterns("edge-parts"))
    monkeypatch.setenv("CHAINTAPE_HOME", str(home))
    # The count the renewal writes is undone after the test.
    monkeypatch.setenv(RENEWALS, "0")
    warehouse, store = resources()["warehouse"], LocalStore(home / "store")
    seen = read_pointer(store)["seq"]
    said: list[str] = []
    renewal = Renewal("live tail", said.append, ["chaintape", "tail"], warm_s=0,
                      above_mb=-4096, execute=exec_stand_in)
    with pytest.raises(Renewed) as renewed:
        follow(LakeWriter(home / "lake", keep_open=True), warehouse, store, 0.05, renewal=renewal)
    assert renewed.value.args == (["chaintape", "tail"],)
    assert read_pointer(store)["seq"] == seen + 1
    assert len(said) == 1 and said[0].startswith("live tail: renewed in place")
    assert multiprocessing.active_children() == []


def _tail_at(store: LocalStore, lake: LakeWriter) -> bool:
    """Whether the published tail reaches the lake's last mark."""
    return (read_pointer(store) or {}).get("as_of") == lake.progress().watermark.isoformat()
