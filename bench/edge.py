"""The edge against nginx, side by side: a published 50-row page and a pair lookup, each with
p99 at a fixed rate.

Prints one JSON line per measurement and a summary line with the ratio. Needs nginx and wrk
(`make bench-edge` installs them).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import orjson
import polars as pl

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"
sys.path.insert(0, str(REPO))

from load import KEYED, internal_key, paced, wrk  # noqa: E402

from publish.writer import ServingTable  # noqa: E402
from tests.conftest import wait_http  # noqa: E402
from tests.edge.conftest import publish_chains  # noqa: E402

NGINX = """worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  default_type application/json;
  server {{
    listen 127.0.0.1:{port};
    location / {{ root {root}/store; }}
  }}
}}
"""
def publish_bench(root: Path) -> tuple[str, str]:
    """Publish 60 chains and 5,000 pair rows of full size: the first chains page's path, and
    the address of the pair nginx gets as a file."""
    template = orjson.loads((REPO / "docs" / "examples" / "pair-row.json").read_bytes())
    addresses = [f"0x{i:040x}" for i in range(5000)]
    items = [orjson.dumps({**template, "pair_address": a}).decode() for a in addresses]
    pairs = pl.DataFrame({"chain_id": [1000] * len(addresses), "pair": addresses,
                          "item": items})
    sid = publish_chains(root, tables=[ServingTable("pairs", pairs, ("chain_id", "pair"))])
    (root / "store" / "pair.json").write_text(items[2500])
    index = orjson.loads((root / "store" / "snapshots" / sid / "lists/chains/index.json")
                         .read_bytes())
    return f"/{index['pages'][0]['object']}", addresses[2500]


def run(bench: str, targets: dict, target_ratio: float, args, root: Path) -> None:
    """Both servers at full speed, then the edge at a fixed rate; one JSON line each."""
    results = {}
    for name, url in targets.items():
        results[name] = wrk(url, args.seconds, args.connections, root / "keyed.lua")
        print(json.dumps({"bench": bench, "server": name, "connections": args.connections,
                          **results[name]}), flush=True)
    paced_run = paced(targets["edge"], args.seconds, args.rate,
                      (root / "keyed.lua").read_text())
    print(json.dumps({"bench": f"{bench}_paced", "server": "edge", "target_rate": args.rate,
                      **paced_run}), flush=True)
    print(json.dumps({"bench": f"{bench}_edge_vs_nginx", "ratio": round(
        results["edge"]["requests_per_s"] / results["nginx"]["requests_per_s"], 3),
        "target_ratio": target_ratio, "p99_ms_at_rate": paced_run["p99_ms"], "target_p99_ms": 10}),
        flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rate", type=int, default=1000, help="requests/s for the p99 run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # nginx workers run as an unprivileged user
        os.environ["CHAINTAPE_HOME"] = str(root)
        page, pair = publish_bench(root)
        key = internal_key(dict(os.environ))
        (root / "keyed.lua").write_text(KEYED.format(key=key))
        (root / "nginx.conf").write_text(NGINX.format(root=root, port=18081))
        servers = [subprocess.Popen(["nginx", "-c", str(root / "nginx.conf")]),
                   subprocess.Popen([str(CLI), "serve", "--port",
                                     "18082"], cwd=REPO, env=os.environ,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        scenarios = {
            "edge_page": ({"nginx": f"http://127.0.0.1:18081{page}",
                           "edge": "http://127.0.0.1:18082/api/v1/chains?limit=50"}, 0.4),
            "pair_lookup": ({"nginx": "http://127.0.0.1:18081/pair.json",
                             "edge": f"http://127.0.0.1:18082/api/v1/chains/chain-00/pairs/{pair}"},
                            0.25),
        }
        try:
            for targets, _ in scenarios.values():
                for url in targets.values():
                    wait_http(url)
                # The same rows from both (the edge's page also carries its cursors).
                edge_body = httpx.get(targets["edge"], headers={"X-API-Key": key}).json()
                nginx_body = httpx.get(targets["nginx"]).json()
                assert edge_body.get("items", edge_body) == nginx_body.get("items", nginx_body)
            for bench, (targets, target_ratio) in scenarios.items():
                run(bench, targets, target_ratio, args, root)
        finally:
            for server in servers:
                server.terminate()
                server.wait(10)


if __name__ == "__main__":
    main()
