"""The edge's memory and speed over a real snapshot, and what each publish writes: one JSON
line per stage. A lake of `--swaps` is simulated once (history ending at a fixed instant) and
materialised; one edge worker serves it. Each lookup family (pair, trades, candles, search,
token and wallet lists, a wallet profile and its trades, the leaderboard, status) is called once
for each of the `--keys` busiest pairs, tokens and wallets, one call at a time (`cold_ms`: what
a first call costs); then a mixed load over all of them, keyed so metering admits it, runs
paced at `--rate` and at full speed; the worker's resident memory is read after it. Then
`--publishes` more snapshots follow, five live minutes each, every earlier one pinned by a
cursor, and the memory is read again: it should not grow with the snapshots. Each stage also
says what the edge's local parts and the store take on disk. `--as-is` serves a home another
bench built (its latest snapshot) as it stands, with no publishes. Needs wrk
(`make bench-edge-memory` installs it)."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import httpx
import polars as pl
from load import CLI, KEYED, REPO, internal_key, paced, wrk
from published import written, written_by_product

from sources.lake import LakeWriter
from sources.simulator import live_market

END = datetime(2026, 11, 20, tzinfo=UTC)
LIVE = timedelta(minutes=5)
MIXED = """local paths = {{{paths}}}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
"""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cli(args: list[str], env: dict) -> None:
    subprocess.run([str(CLI), *args], check=True, cwd=REPO, env=env,
                   stdout=subprocess.DEVNULL)


def rss_mb(pid: int) -> dict[str, float]:
    """Resident memory of a process and of its largest child (the worker), in MB, and the
    worker's split between its own (anonymous) pages and the mapped files' pages, which every
    process mapping the same parts shares through the page cache."""
    def status(p: int) -> dict[str, float]:
        return {line.split(":")[0]: int(line.split()[1]) / 1024
                for line in Path(f"/proc/{p}/status").read_text().splitlines()
                if line.startswith(("VmRSS:", "RssAnon:", "RssFile:"))}
    children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    worker = max((status(c) for c in children), key=lambda s: s["VmRSS"],
                 default={"VmRSS": 0.0, "RssAnon": 0.0, "RssFile": 0.0})
    return {"rss_worker_mb": round(worker["VmRSS"], 1),
            "rss_worker_anon_mb": round(worker["RssAnon"], 1),
            "rss_worker_file_mb": round(worker["RssFile"], 1),
            "rss_total_mb": round(status(pid)["VmRSS"] + sum(
                status(c)["VmRSS"] for c in children), 1)}


def families(warehouse: Path, keys: int) -> dict[str, list[str]]:
    """Requests of every lookup family over the `keys` busiest pairs, tokens and wallets (lists
    on each of their chains, searches by the tokens' first letters)."""
    slugs = pl.read_delta(str(warehouse / "chain_records")).select("chain_id", "slug")
    pairs = pl.read_delta(str(warehouse / "pair_rows")).join(slugs, on="chain_id").sort(
        "txns_h24", descending=True).head(keys)
    tokens = pl.read_delta(str(warehouse / "token_rows")).join(slugs, on="chain_id").sort(
        "volume_h24_usd", descending=True, nulls_last=True).head(keys)
    wallets = pl.read_delta(str(warehouse / "wallet_rankings")).join(
        slugs, on="chain_id").sort("trades", descending=True).head(keys)
    api = "/api/v1"
    pair_urls = [f"{api}/chains/{p['slug']}/pairs/{p['pair']}"
                 for p in pairs.iter_rows(named=True)]
    wallet_urls = [f"{api}/chains/{w['slug']}/wallets/{w['wallet']}"
                   for w in wallets.iter_rows(named=True)]
    chains = sorted(set(pairs["slug"]))
    return {
        "pair": pair_urls,
        "pair_trades": [f"{url}/trades?limit=50" for url in pair_urls],
        "candles": [f"{url}/candles?resolution=5m" for url in pair_urls],
        "search": [f"{api}/search?q={quote(symbol[:3])}" for symbol in tokens["symbol"]],
        "token_list": [f"{api}/tokens?limit=50&chain={slug}" for slug in chains],
        "token": [f"{api}/chains/{t['slug']}/tokens/{t['address']}"
                  for t in tokens.iter_rows(named=True)],
        "wallet_list": [f"{api}/wallets?limit=50&chain={slug}" for slug in chains],
        "wallet": wallet_urls,
        "wallet_trades": [f"{url}/trades?limit=50" for url in wallet_urls],
        "leaderboard": [f"{api}/leaderboard?scope=chains"],
        "status": [f"{api}/status"],
    }


def mixed(by_family: dict[str, list[str]]) -> list[str]:
    """One request of each family in turn, each family cycling through its keys."""
    rounds = max(len(urls) for urls in by_family.values())
    return [urls[n % len(urls)] for n in range(rounds) for urls in by_family.values()]


def cold(client: httpx.Client, by_family: dict[str, list[str]]) -> dict[str, float]:
    """Median milliseconds of each family's first call of each URL: what a lookup costs before
    the edge keeps its answer."""
    took: dict[str, float] = {}
    for family, urls in by_family.items():
        times = []
        for url in urls:
            start = time.perf_counter()
            answer = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
            assert answer.status_code == 200, (url, answer.text[:200])
        took[family] = round(statistics.median(times), 2)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--swaps", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--publishes", type=int, default=3)
    parser.add_argument("--port", type=int, default=18093)
    parser.add_argument("--keys", type=int, default=100,
                        help="pairs, tokens and wallets the mixed load cycles through")
    parser.add_argument("--home", type=Path, default=REPO / "var" / "bench-edge-memory")
    parser.add_argument("--as-is", action="store_true",
                        help="serve the home's latest snapshot as it stands (one another bench "
                             "built, e.g. --home var/bench-incremental), without simulating "
                             "or materialising; with --publishes 0")
    args = parser.parse_args()
    if args.as_is and args.publishes:
        parser.error("--as-is serves the home as it stands: give --publishes 0")
    home = args.home / str(args.swaps)
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "CHAINTAPE_LAKE": str(home / "lake"),
           "DAGSTER_HOME": str(home / "dagster"), "CHAINTAPE_STALE_AFTER_SECONDS": "1e12"}
    # The edge's parts: an earlier run's would count against this one's disk.
    shutil.rmtree(home / "edge-parts", ignore_errors=True)
    if not args.as_is:
        pristine = home / "history"
        if not pristine.exists():
            say(f"simulating {args.swaps:,} swaps up to {END:%Y-%m-%d} (once) ...")
            cli(["simulate", "--swaps", str(args.swaps), "--end", END.isoformat()],
                {**env, "CHAINTAPE_LAKE": str(pristine)})
        for name in ("lake", "warehouse", "store", "dagster"):
            shutil.rmtree(home / name, ignore_errors=True)
        shutil.copytree(pristine, home / "lake")
        (home / "dagster").mkdir()
        say("materialising and publishing the first snapshot ...")
        cli(["materialize"], env)
    key = internal_key(env)
    base = f"http://127.0.0.1:{args.port}"
    by_family = families(home / "warehouse", args.keys)
    script = KEYED.format(key=key) + MIXED.format(
        paths=", ".join(json.dumps(p) for p in mixed(by_family)))
    server = subprocess.Popen([str(CLI), "serve", "--port", str(args.port)], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=30)
    try:
        for _ in range(300):
            try:
                if client.get("/api/v1/status").json().get("snapshot"):
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        def stage(name: str, published: int) -> None:
            first_calls = cold(client, by_family)
            at_rate = paced(base, args.seconds, args.rate, script)
            full = wrk(base, args.seconds, 8, _written(home, script))
            print(json.dumps({"bench": "edge_memory", "swaps": args.swaps, "stage": name,
                              "snapshots": published, **rss_mb(server.pid),
                              "keys": args.keys, "cold_ms": first_calls,
                              "paced": at_rate, "full_speed": full,
                              "publish_bytes": written(home / "store")[0],
                              "disk_mb": {"edge_parts": disk_mb(home / "edge-parts"),
                                          "store": disk_mb(home / "store")},
                              "publish_written": written_by_product(home / "store"),
                              "targets": {"rss_worker_mb": 1024 if args.swaps <= 1_000_000
                                          else 1536, "p99_ms": 10,
                                          "full_speed_requests_per_s": 5000}}), flush=True)

        stage("first snapshot" if not args.as_is else "the home's latest snapshot", 1)
        if not args.publishes:
            return
        lake = LakeWriter(home / "lake")
        market = live_market.start(lake)
        pinned = []
        for n in range(1, args.publishes + 1):
            pair_trades = by_family["pair_trades"][0]
            pinned.append(client.get(pair_trades).json()["next_cursor"])
            live_market.commit(lake, market, (END + n * LIVE).timestamp())
            say(f"publish {n + 1}: five more live minutes ...")
            before = client.get("/api/v1/status").json()["snapshot"]["id"]
            cli(["materialize"], env)
            while client.get("/api/v1/status").json()["snapshot"]["id"] == before:
                time.sleep(0.5)
            # Every earlier snapshot stays pinned by a cursor into it.
            for cursor in pinned:
                assert client.get(pair_trades, params={"cursor": cursor}).status_code == 200
        stage(f"after {args.publishes} more publishes, all pinned", args.publishes + 1)
    finally:
        server.terminate()
        server.wait(30)


def disk_mb(directory: Path) -> int:
    """What the files under `directory` take on disk, in MB."""
    return sum(f.stat().st_blocks * 512 for f in directory.rglob("*") if f.is_file()) >> 20


def _written(home: Path, script: str) -> Path:
    path = home / "mixed.lua"
    path.write_text(script)
    return path


if __name__ == "__main__":
    main()
