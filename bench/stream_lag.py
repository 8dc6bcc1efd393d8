"""From block time to a stream client: the busiest pairs' trade streams (two per chain by the
last hour's swaps, at most eight) read over SSE from a running `chaintape up`, each trade's
arrival against its block's time. A trade event's `timestamp` is whole seconds (the wire's),
so each figure may read up to a second high. Prints one JSON line: the median, p90 and p99
per chain and over every chain that is live (a chain whose indexer trails its head by more than
a minute by design, the simulator's lagging one, is reported apart), in seconds.

    .venv/bin/python bench/stream_lag.py --home var [--base http://127.0.0.1:8000] [--seconds 180]

Run it beside `make up` (or `bench/soak.py`'s stack, with its home and port).
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.load import internal_key  # noqa: E402

PAIRS = 8


# An indexer this far behind its chain's head trails it by design, not by the pipeline.
TRAILING_S = 60


def busiest(base: str, headers: dict, chains: list[dict]) -> list[tuple[str, str]]:
    """(chain slug, pair) of the busiest pairs by the last hour's swaps: each syncing chain's
    busiest first, then each one's second, up to PAIRS."""
    ranked = [[(chain["slug"], r["pair_address"]) for r in httpx.get(
        f"{base}/pairs", params={"chains": chain["slug"], "sort": "txns", "timeframe": "h1",
                                 "limit": 2}, headers=headers, timeout=30).json()["items"]]
              for chain in chains if chain["syncing"]]
    return [pair for place in range(2) for pairs in ranked if len(pairs) > place
            for pair in [pairs[place]]][:PAIRS]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def figures(lags: list[float]) -> dict:
    if not lags:
        return {"trades": 0}
    return {"trades": len(lags), "median_s": round(statistics.median(lags), 2),
            "p90_s": round(percentile(lags, 0.9), 2), "p99_s": round(percentile(lags, 0.99), 2)}


def read(url: str, headers: dict, until: float, out: list[float]) -> None:
    """Each trade event's arrival minus its block time, until `until`."""
    try:
        with httpx.stream("GET", url, headers=headers,
                          timeout=httpx.Timeout(10, read=60)) as answer:
            event = ""
            for line in answer.iter_lines():
                if time.time() > until:
                    return
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event == "trade":
                    at = time.time()
                    stamp = json.loads(line[5:])["timestamp"].replace("Z", "+00:00")
                    out.append(at - datetime.fromisoformat(stamp).timestamp())
    except httpx.HTTPError:
        return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", default=str(REPO / "var"))
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--seconds", type=float, default=180)
    args = parser.parse_args()
    env = {**os.environ, "CHAINTAPE_HOME": str(Path(args.home).absolute())}
    headers = {"X-API-Key": internal_key(env)}
    base = args.base.rstrip("/") + "/api/v1"
    chains = httpx.get(f"{base}/chains", params={"limit": 100}, headers=headers,
                       timeout=30).json()["items"]
    trailing = {c["slug"] for c in chains if (c["block_lag_seconds"] or 0) > TRAILING_S}
    pairs = busiest(base, headers, chains)
    until = time.time() + args.seconds
    lags: dict[tuple[str, str], list[float]] = {p: [] for p in pairs}
    readers = [threading.Thread(target=read, args=(f"{base}/chains/{slug}/pairs/{pair}/stream",
                                                   headers, until, lags[(slug, pair)]),
                                daemon=True) for slug, pair in pairs]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(args.seconds + 30)
    by_chain: dict[str, list[float]] = {}
    for (slug, _), found in lags.items():
        by_chain.setdefault(slug, []).extend(found)
    every = [lag for (slug, _), found in lags.items() if slug not in trailing for lag in found]
    print(json.dumps({"bench": "stream_lag", "seconds": args.seconds, "pairs": len(pairs),
                      "all": figures(every), "trailing_by_design": sorted(trailing),
                      "chains": {slug: figures(found) for slug, found in by_chain.items()}}))


if __name__ == "__main__":
    main()
