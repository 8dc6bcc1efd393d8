"""Wallet profiles through the edge: p99 at a fixed rate (500 requests/s by default, held by
`bench.edge.paced`) and the rate at full speed, over many different wallets (the busiest first,
then a spread of the rest), each call metered with an API key. `--read positions` (or
`rounds`) measures those wallets' positions (or rounds) instead.

Prints one JSON line per run. Needs wrk (`make bench-wallets` installs it) and a home with a
published snapshot (`--home`, default: a 7-day lake of `--swaps` swaps simulated and
materialised first).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import polars as pl

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"
sys.path.insert(0, str(REPO))

from bench.edge import internal_key, paced, wrk  # noqa: E402
from bench.load import ROUND_ROBIN  # noqa: E402
from bench.oracle import prepared_home  # noqa: E402
from core.home import home as home_of  # noqa: E402
from tests.conftest import free_port, wait_http  # noqa: E402


def wallet_paths(home: Path, count: int, read: str = "") -> list[str]:
    """Profile paths of `count` wallets (with `read`, their positions' or rounds'): the half
    with the largest profiles, and an even spread of the rest."""
    os.environ["CHAINTAPE_HOME"] = str(home)
    warehouse = home_of() / "warehouse"
    profiles = (pl.scan_delta(str(warehouse / "wallet_profiles"))
                .select("slug", "wallet", size=pl.col("head").str.len_bytes())
                .sort("size", descending=True).collect())
    busiest = profiles.head(count // 2)
    rest = profiles.slice(count // 2)
    step = max(rest.height // max(count - busiest.height, 1), 1)
    chosen = pl.concat([busiest, rest.gather_every(step).head(count - busiest.height)])
    tail = f"/{read}" if read else ""
    return [f"/api/v1/chains/{s}/wallets/{w}{tail}"
            for s, w in chosen.select("slug", "wallet").rows()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home")
    parser.add_argument("--swaps", type=int, default=1_000_000,
                        help="swaps of the lake simulated when no --home is given")
    parser.add_argument("--rate", type=int, default=500, help="requests/s of the paced run")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--wallets", type=int, default=2000)
    parser.add_argument("--read", choices=("profile", "positions", "rounds"), default="profile")
    args = parser.parse_args()
    home = prepared_home(args.home, days=7, swaps=args.swaps)
    paths = wallet_paths(home, args.wallets, "" if args.read == "profile" else args.read)
    env = {**os.environ, "CHAINTAPE_HOME": str(home)}
    key = internal_key(env)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([str(CLI), "serve", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sizes = []
    try:
        wait_http(base + "/v1/status")
        with httpx.Client(base_url=base, headers={"X-API-Key": key}) as client:
            for path in paths:
                answer = client.get(path)
                assert answer.status_code == 200, (path, answer.text)
                sizes.append(len(answer.content))
        quoted = ",".join(f'"{p}"' for p in paths)
        walk = ROUND_ROBIN.format(key=key, paths=quoted)
        with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
            script.write(walk)
            script.flush()
            full = wrk(base + paths[0], args.seconds, 32, Path(script.name))
        runs = {"full_speed": {**full, "connections": 32},
                "paced": {"rate_asked": args.rate, "target_p99_ms": 15,
                          **paced(base + paths[0], args.seconds, args.rate, walk)}}
        for name, result in runs.items():
            print(json.dumps({"bench": f"wallet_{args.read}_{name}", "wallets": len(paths),
                              "body_bytes_median": sorted(sizes)[len(sizes) // 2],
                              "body_bytes_max": max(sizes), **result}), flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
