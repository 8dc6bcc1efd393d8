"""Freshness: from the moment a swap is committed to the lake to the moment the edge serves it
in its pair's trades and row, on the live default (`chaintape up`: the live market, the lake
sensor's refreshes, the live tail and the edge) at the 10M-swaps-a-week rate, with the edge
under paced load (the busiest pairs' rows and trades and their tokens' rows, round robin);
then those lookups paced at 1,000 requests/s while all of it runs, and again with the
refreshes paused (side by side: what the batch sharing the cores costs the lookups).

For every lake commit holding a swap, the commit's newest swap is followed: the lake's mark
records when it was committed (`written_at`); the tail's pointer when its writer saw the mark
and published the tail; the bench polls the edge every 20 ms until the swap is in its pair's
newest trades and the pair row's last trade has reached it. Meanwhile the CPU each part of
the system takes is read from /proc (`cpu_cores`: CPU seconds over the window's seconds, per
role). Prints one JSON line.
Needs wrk (`make bench-freshness` installs it).
"""

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import polars as pl

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"
sys.path.insert(0, str(REPO))

from bench.load import DELAY, ROUND_ROBIN, internal_key, wrk  # noqa: E402
from bench.processes import session_processes  # noqa: E402
from core.store import LocalStore  # noqa: E402
from publish.tail import read_pointer  # noqa: E402
from sources.lake import PROGRESS, LakeWriter  # noqa: E402
from tests.conftest import free_port, wait_http  # noqa: E402

WEEK_10M_PER_DAY = 10_000_000 // 7


def held(url: str, seconds: int, rate: int, script: str, connections: int = 50) -> dict:
    """wrk at no more than `rate` requests/s: each connection waits its share of a second
    after every answer (a slow answer lowers the rate, never raises it)."""
    share = round(connections * 1000 / rate)
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(script + DELAY.format(delay_ms=share))
        lua.flush()
        return {**wrk(url, seconds, connections, Path(lua.name)), "connections": connections,
                "delay_ms": share}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile, None when it falls on a swap never served."""
    ordered = sorted(values)
    value = ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return None if value == float("inf") else round(value, 3)


ROLES = (("refreshes", ("dagster",)), ("edge", (" serve", "granian")),
         ("tail writer", (" tail",)), ("live market", ("simulate", " live")))


def cpu_by_process(session: int) -> dict[int, tuple[str, float]]:
    """Each process of a session (and this bench's own, with wrk): its role and CPU seconds."""
    return {pid: (p.role, p.cpu_s) for pid, p in
            session_processes(session, ROLES, "load (wrk, this bench)").items()}


@contextlib.contextmanager
def refreshes_paused(session: int) -> Iterator[int]:
    """The refreshes (the Dagster daemon and every process of its runs) stopped meanwhile and
    resumed after, so that what they cost the lookups is measured side by side; yields how many
    processes were stopped."""
    paused = [pid for pid, (role, _) in cpu_by_process(session).items() if role == "refreshes"]
    for pid in paused:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        yield len(paused)
    finally:
        for pid in paused:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


class CpuWatch:
    """CPU seconds per role from start to stop, read every half second (a process that ends
    between two readings loses its last half second)."""

    def __init__(self, session: int) -> None:
        self.session, self.first = session, cpu_by_process(session)
        self.last = dict(self.first)
        self.started = time.monotonic()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(0.5):
            self.last.update(cpu_by_process(self.session))

    def stop(self) -> dict[str, float]:
        """Cores each role used on average over the window."""
        self.done.set()
        self.thread.join()
        seconds = time.monotonic() - self.started
        used: dict[str, float] = {}
        for pid, (role, cpu) in self.last.items():
            used[role] = used.get(role, 0.0) + cpu - self.first.get(pid, (role, 0.0))[1]
        return {role: round(cpu / seconds, 2) for role, cpu in sorted(used.items())}


def mark(lake_root: Path) -> dict | None:
    try:
        return json.loads((lake_root / PROGRESS).read_bytes())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def newest_swap(lake: LakeWriter, after: datetime, until: datetime) -> dict | None:
    """The newest swap of the lake dated in (after, until], with its chain, pair and place."""
    day = until.date().isoformat()
    found = (lake.scan("swaps", day)
             .filter(pl.col("block_time") > after, pl.col("block_time") <= until)
             .sort("block_time", "log_index").tail(1).collect())
    return None if found.is_empty() else found.row(0, named=True)


def served(client: httpx.Client, swap: dict) -> bool:
    """Whether the edge shows `swap` in its pair's newest trades and, when the swap is priced,
    its pair row's last trade has reached it."""
    base = f"/chains/{swap['chain_id']}/pairs/{swap['pair']}"
    trades = client.get(base + "/trades", params={"limit": 100})
    if trades.status_code != 200:
        return False
    mine = next((t for t in trades.json()["items"]
                 if t["block_info"]["block_number"] == swap["block_number"]
                 and t["block_info"]["log_index"] == swap["log_index"]), None)
    if mine is None:
        return False
    if mine["event_data"]["price_usd0"] is None and mine["event_data"]["price_usd1"] is None:
        # A swap nothing prices (its quote has no feed) moves no row figure: a pair row's last
        # trade, in the batch as live, is its last priced one.
        return True
    row = client.get(base)
    last = row.json().get("last_trade_at") if row.status_code == 200 else None
    return last is not None and datetime.fromisoformat(last.replace("Z", "+00:00")) >= (
        swap["block_time"].replace(microsecond=swap["block_time"].microsecond // 1000 * 1000))


def follow(home: Path, client: httpx.Client, seconds: float) -> list[dict]:
    """Follow every lake commit's newest swap for `seconds` until the edge serves it."""
    lake_root, store = home / "lake", LocalStore(home / "store")
    lake = LakeWriter(lake_root)
    seen = mark(lake_root)
    pending: list[dict] = []
    done: list[dict] = []
    stop = time.time() + seconds
    while time.time() < stop or pending:
        now = mark(lake_root)
        if time.time() < stop and now and seen and now["step"] != seen["step"]:
            swap = newest_swap(lake, datetime.fromisoformat(seen["watermark"]),
                               datetime.fromisoformat(now["watermark"]))
            if swap is not None:
                pending.append({"swap": swap, "committed": datetime.fromisoformat(
                    now["written_at"]).timestamp(), "watermark": now["watermark"]})
            seen = now
        pointer = read_pointer(store) or {}
        for item in list(pending):
            if "picked" not in item and pointer.get("as_of") and datetime.fromisoformat(
                    pointer["as_of"]) >= datetime.fromisoformat(item["watermark"]):
                item["picked"], item["published"] = pointer["picked_at"], pointer["published_at"]
            if served(client, item["swap"]):
                item["served"] = time.time()
                pending.remove(item)
                done.append(item)
            elif time.time() - item["committed"] > 120:
                pending.remove(item)
                swap = item["swap"]
                # A pool created since the snapshot has no row until the next one (docs/live.md).
                row = client.get(f"/chains/{swap['chain_id']}/pairs/{swap['pair']}")
                done.append({**item, "served": None, "row_status": row.status_code})
        time.sleep(0.02)
    return done


def summary(done: list[dict]) -> dict:
    """The lag distribution (a swap not served within 120 s counted as later than any served)
    and where it goes."""
    lags = [d["served"] - d["committed"] for d in done if d["served"] is not None]
    parts = [d for d in done if d["served"] is not None and "picked" in d]
    if not lags:
        return {"swaps_followed": len(done), "served": 0}
    every = lags + [float("inf")] * (len(done) - len(lags))
    return {
        "swaps_followed": len(done), "served": len(lags),
        "lag_median_s": percentile(every, 0.5), "lag_p90_s": percentile(every, 0.9),
        "lag_p99_s": percentile(every, 0.99), "lag_max_s": percentile(every, 1.0),
        "commit_to_picked_median_s": round(statistics.median(
            d["picked"] - d["committed"] for d in parts), 3) if parts else None,
        "picked_to_published_median_s": round(statistics.median(
            d["published"] - d["picked"] for d in parts), 3) if parts else None,
        "published_to_served_median_s": round(statistics.median(
            d["served"] - d["published"] for d in parts), 3) if parts else None,
        "not_served": [{"chain_id": d["swap"]["chain_id"], "pair": d["swap"]["pair"],
                        "pair_row_status": d["row_status"]}
                       for d in done if d["served"] is None],
        # Where the slowest swaps' time went.
        "slowest": [{"lag_s": round(d["served"] - d["committed"], 2),
                     "commit_to_picked_s": round(d["picked"] - d["committed"], 2),
                     "picked_to_published_s": round(d["published"] - d["picked"], 2),
                     "published_to_served_s": round(d["served"] - d["published"], 2)}
                    for d in sorted(parts, key=lambda d: d["committed"] - d["served"])[:3]],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", default=str(REPO / "var" / "bench-freshness"))
    parser.add_argument("--seconds", type=int, default=300,
                        help="how long to follow the lake's commits")
    parser.add_argument("--rate", type=int, default=500, help="load on the edge meanwhile")
    # Long enough to hold two snapshots or more (one lands about once a minute): a shorter
    # window's p99 says mostly whether one landed in it.
    parser.add_argument("--lookup-seconds", type=int, default=120,
                        help="how long the lookups are held at 1,000 requests/s (each way)")
    args = parser.parse_args()
    home = Path(args.home)
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "PORT": str(port)}
    say(f"bench home {home}: one day of history at {WEEK_10M_PER_DAY:,} swaps a day, live")
    began = time.time()
    up = subprocess.Popen([str(CLI), "up", "--days", "1", "--swaps", str(WEEK_10M_PER_DAY)],
                          env=env, cwd=REPO, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/api/v1/status", timeout=1800)
        # A tail of this run's writer: one left in the home by an earlier run does not count.
        while (read_pointer(LocalStore(home / "store")) or {}).get("published_at", 0) < began:
            time.sleep(1)
        key = internal_key(env)
        with httpx.Client(base_url=base + "/api/v1", timeout=10,
                          headers={"X-API-Key": key}) as client:
            busiest = client.get("/pairs", params={"sort": "txns", "limit": 50}).json()["items"]
            paths = [f"/api/v1/chains/{p['network']['chain_id']}/pairs/{p['pair_address']}"
                     + suffix for p in busiest for suffix in ("", "/trades")]
            # Their tokens' rows too, quotes included (a quote's row reads all its pairs).
            paths += sorted({f"/api/v1/chains/{p['network']['chain_id']}/tokens/{t['address']}"
                             for p in busiest for t in p["tokens"]})
            script = ROUND_ROBIN.format(key=key, paths=", ".join(f'"{p}"' for p in paths))
            load: dict = {}
            loader = threading.Thread(target=lambda: load.update(
                held(base + paths[0], args.seconds, args.rate, script)))
            say(f"following the lake's commits for {args.seconds}s, the edge at {args.rate} "
                "requests/s")
            loader.start()
            watch = CpuWatch(up.pid)
            done = follow(home, client, args.seconds)
            cpu_cores = watch.stop()
            loader.join()
            say(f"lookups paced at 1,000 requests/s for {args.lookup_seconds}s, live")
            lookups = held(base + paths[0], args.lookup_seconds, 1000, script)
            say("the same, the refreshes paused")
            with refreshes_paused(up.pid) as stopped:
                alone = {**held(base + paths[0], args.lookup_seconds, 1000, script),
                         "processes_paused": stopped}
            status = client.get("/status").json()
        lake = LakeWriter(home / "lake")
        swaps_per_s = (lake.scan("swaps").filter(
            pl.col("block_time") > datetime.fromtimestamp(time.time() - 3600).astimezone())
            .select(pl.len()).collect().item() / 3600)
        print(json.dumps({"bench": "freshness", "swaps_per_s": round(swaps_per_s, 2),
                          **summary(done),
                          "load": {"asked_per_s": args.rate, **load},
                          "lookups_at_1000": lookups,
                          "lookups_at_1000_refreshes_paused": alone, "cpu_cores": cpu_cores,
                          "snapshot_trails_now_s": status["watermark"]["trails_now_seconds"],
                          "live_trails_now_s": (status["live"] or {}).get(
                              "trails_now_seconds")}), flush=True)
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        up.wait(60)


if __name__ == "__main__":
    main()
