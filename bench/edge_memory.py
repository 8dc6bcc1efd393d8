"""The edge's memory and speed over a real snapshot, and what each publish writes: one JSON
line per stage. A lake of `--swaps` is simulated once (history ending at a fixed instant) and
materialised; one edge worker serves it; a mixed load over every lookup family (pair, trades,
candles, search, token and wallet lists, a wallet profile and its trades, the leaderboard,
status; keyed so metering admits it) runs paced at `--rate` and then at full speed; the
worker's resident memory is read after it. Then `--publishes` more snapshots follow, five live
minutes each, every earlier one pinned by a cursor, and the memory is read again: it should
not grow with the snapshots. Needs wrk (`make bench-edge-memory` installs it)."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import polars as pl
from load import CLI, KEYED, REPO, internal_key, paced, wrk
from published import written

from sources.lake import Lake
from sources.simulator import live

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
    """Resident memory of a process and of its largest child (the worker), in MB."""
    def rss(p: int) -> float:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0
    children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    workers = [rss(c) for c in children] or [0.0]
    return {"rss_worker_mb": round(max(workers), 1),
            "rss_total_mb": round(rss(pid) + sum(workers), 1)}


def paths(warehouse: Path) -> list[str]:
    """One request of every lookup family, on the busiest pair, a listed token and the most
    active wallet."""
    pairs = pl.read_parquet(warehouse / "pair_rows.parquet").join(
        pl.read_parquet(warehouse / "chain_records.parquet").select("chain_id", "slug"),
        on="chain_id")
    pair = pairs.sort("txns_h24", descending=True).row(0, named=True)
    chain = f"/chains/{pair['slug']}"
    token = pl.read_parquet(warehouse / "token_rows.parquet").filter(
        pl.col("chain_id") == pair["chain_id"]).sort("volume_h24_usd", descending=True,
                                                     nulls_last=True).row(0, named=True)
    wallet = pl.read_parquet(warehouse / "wallet_rankings.parquet").filter(
        pl.col("chain_id") == pair["chain_id"]).sort("trades", descending=True).row(
        0, named=True)["wallet"]
    api, slug = "/api/v1", pair["slug"]
    chain = f"{api}/chains/{slug}"
    return [f"{chain}/pairs/{pair['pair']}", f"{chain}/pairs/{pair['pair']}/trades?limit=50",
            f"{chain}/pairs/{pair['pair']}/candles?resolution=5m",
            f"{api}/search?q={token['symbol'][:3]}", f"{api}/tokens?limit=50&chain={slug}",
            f"{chain}/tokens/{token['address']}", f"{api}/wallets?limit=50&chain={slug}",
            f"{chain}/wallets/{wallet}", f"{chain}/wallets/{wallet}/trades?limit=50",
            f"{api}/leaderboard?scope=chains", f"{api}/status"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--swaps", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--publishes", type=int, default=3)
    parser.add_argument("--port", type=int, default=18093)
    parser.add_argument("--home", type=Path, default=REPO / "var" / "bench-edge-memory")
    args = parser.parse_args()
    home = args.home / str(args.swaps)
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "CHAINTAPE_LAKE": str(home / "lake"),
           "DAGSTER_HOME": str(home / "dagster"), "CHAINTAPE_STALE_AFTER_SECONDS": "1e12"}
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
    script = KEYED.format(key=key) + MIXED.format(
        paths=", ".join(json.dumps(p) for p in paths(home / "warehouse")))
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
        for path in paths(home / "warehouse"):
            assert client.get(path).status_code == 200, path

        def stage(name: str, published: int) -> None:
            at_rate = paced(base, args.seconds, args.rate, script)
            full = wrk(base, args.seconds, 8, _written(home, script))
            print(json.dumps({"bench": "edge_memory", "swaps": args.swaps, "stage": name,
                              "snapshots": published, **rss_mb(server.pid),
                              "paced": at_rate, "full_speed": full,
                              "publish_bytes": written(home / "store")[0],
                              "targets": {"rss_worker_mb": 1024 if args.swaps <= 1_000_000
                                          else 1536, "p99_ms": 10,
                                          "full_speed_requests_per_s": 5000}}), flush=True)

        stage("first snapshot", 1)
        lake = Lake(home / "lake")
        market = live.start(lake)
        pinned = []
        for n in range(1, args.publishes + 1):
            pair_trades = paths(home / "warehouse")[1]
            pinned.append(client.get(pair_trades).json()["next_cursor"])
            live.commit(lake, market, (END + n * LIVE).timestamp())
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


def _written(home: Path, script: str) -> Path:
    path = home / "mixed.lua"
    path.write_text(script)
    return path


if __name__ == "__main__":
    main()
