"""The oracle under load: latest prices for 100 ids at a fixed rate (p99; the rate held by
`bench.edge.paced`), and many SSE clients on fixed_rate@200ms (delivery lag from each update's
slot, and the server's memory over time).

Prints one JSON line per measurement. Needs wrk (`make bench-oracle` installs it) and a home
with a published snapshot (`--home`, default: a small lake simulated and materialised first).
"""

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"
sys.path.insert(0, str(REPO))

from bench.edge import paced  # noqa: E402
from core.feeds import FEEDS  # noqa: E402
from core.prices import slot_time  # noqa: E402
from tests.conftest import free_port, wait_http  # noqa: E402

# Pyth's slot counter starts at SLOT_EPOCH: metadata.slot + this is the process's slot number.
SLOT_BASE = 1_600_000_000 * 5 // 2
SLOT = re.compile(rb'"slot":(\d+)')


def prepared_home(given: str | None, days: int = 2, swaps: int = 6000) -> Path:
    """A home with a published snapshot: the one given, else a fresh one of `days` and `swaps`
    (the simulator's and the pipeline's progress go to stderr)."""
    if given:
        return Path(given)
    home = Path(tempfile.mkdtemp(prefix="chaintape-bench-"))
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    for args in (["simulate", "--days", str(days), "--swaps", str(swaps)], ["materialize"]):
        subprocess.run([str(CLI), *args], env=env, check=True, stdout=sys.stderr)
    return home


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB."""
    pids = [str(pid), *subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                      text=True).stdout.split()]
    out = subprocess.run(["ps", "-o", "rss=", "-p", ",".join(pids)], capture_output=True,
                         text=True).stdout.split()
    return round(sum(int(x) for x in out) / 1024, 1)


def latest_url(base: str) -> str:
    """/v2/updates/price/latest with 100 ids: every feed by each of its ids, repeated."""
    ids = [i for f in FEEDS for i in (f.feed_id, f.compatible_id) if i]
    asked = (ids * (100 // len(ids) + 1))[:100]
    return base + "/v2/updates/price/latest?" + "&".join(f"ids[]={i}" for i in asked)


async def sse_client(host: str, port: int, path: str, lags: list[float], stop: float) -> int:
    """Read the stream until `stop`, recording each BTC update's lag behind its slot."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    events = 0
    while time.time() < stop:
        try:
            line = await asyncio.wait_for(reader.readline(), max(0.1, stop - time.time()))
        except TimeoutError:
            break
        if line.startswith(b"data: "):
            events += 1
            now = time.time()
            for found in SLOT.finditer(line):
                lags.append(now - slot_time(int(found.group(1)) + SLOT_BASE))
    writer.close()
    return events


async def sse_run(base: str, clients: int, seconds: int, pid: int) -> dict:
    """`clients` streams on fixed_rate@200ms for `seconds`, with memory sampled along."""
    host, port = base.removeprefix("http://").split(":")
    btc = next(f for f in FEEDS if f.symbol == "Crypto.BTC/USD")
    path = f"/v2/updates/price/stream?ids[]={btc.feed_id}&channel=fixed_rate@200ms"
    lags: list[float] = []
    stop = time.time() + seconds
    tasks = [asyncio.ensure_future(sse_client(host, int(port), path, lags, stop))
             for _ in range(clients)]
    memory = []
    started = time.time()
    while time.time() < stop:
        memory.append((round(time.time() - started), rss_mb(pid)))
        print(json.dumps({"progress_s": memory[-1][0], "rss_mb": memory[-1][1],
                          "updates_seen": len(lags)}), file=sys.stderr, flush=True)
        await asyncio.sleep(min(30, max(0.1, stop - time.time())))
    events = await asyncio.gather(*tasks)
    memory.append((round(time.time() - started), rss_mb(pid)))
    ordered = sorted(lags)
    warm = [m for t, m in memory if t >= 30] or [m for _, m in memory]
    return {"bench": "oracle_sse_fixed_rate_200ms", "clients": clients, "seconds": seconds,
            "clients_receiving": sum(1 for e in events if e > 0), "updates": len(lags),
            "lag_median_ms": round(statistics.median(ordered) * 1000, 1),
            "lag_p99_ms": round(ordered[int(len(ordered) * 0.99)] * 1000, 1),
            "rss_mb_after_30s": warm[0], "rss_mb_end": memory[-1][1],
            "rss_mb_max_after_30s": max(warm), "rss_samples": memory}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home")
    parser.add_argument("--rate", type=int, default=1000, help="requests/s of the latest run")
    parser.add_argument("--seconds", type=int, default=30, help="length of the latest run")
    parser.add_argument("--clients", type=int, default=1000, help="SSE clients")
    parser.add_argument("--sse-seconds", type=int, default=600)
    args = parser.parse_args()
    home = prepared_home(args.home)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "CHAINTAPE_HOME": str(home)}
    server = subprocess.Popen([str(CLI), "serve", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(base + "/v1/status")
        url = latest_url(base)
        assert httpx.get(url).status_code == 200
        paced_run = paced(url, args.seconds, args.rate)
        print(json.dumps({"bench": "oracle_latest_100_ids", "rate_asked": args.rate,
                          "distinct_feeds": len(FEEDS), **paced_run}), flush=True)
        print(json.dumps(asyncio.run(sse_run(base, args.clients, args.sse_seconds,
                                             server.pid))), flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
