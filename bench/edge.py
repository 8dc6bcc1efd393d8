"""The edge against nginx, side by side: a published 50-row page, then p99 at a fixed rate.

Prints one JSON line per measurement and a summary line with the ratio. Needs nginx and wrk
(`make bench-edge` installs them).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"
sys.path.insert(0, str(REPO))

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
PACE = """wrk.headers["X-API-Key"] = "{key}"
function delay() return {delay_ms} end
"""
KEYED = """wrk.headers["X-API-Key"] = "{key}"
"""


def wrk(url: str, seconds: int, connections: int, script: Path) -> dict:
    """Requests/s, p99 latency (ms) and non-2xx count of one wrk run."""
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency",
                          "-s", str(script), url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requests_per_s": round(rps), "p99_ms": round(float(p99.group(1)) * scale, 2),
            "non_2xx": int(bad.group(1)) if bad else 0}


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
        sid = publish_chains(root)
        page = f"/snapshots/{sid}/lists/chains/1.json"
        key = subprocess.run([str(CLI), "keys", "create", "--name",
                              "bench", "--plan", "internal"], capture_output=True, text=True,
                             check=True, cwd=REPO, env=os.environ).stdout.strip()
        (root / "keyed.lua").write_text(KEYED.format(key=key))
        # wrk waits `delay` after each answer, so the pace is a little under the target rate.
        connections = 25
        (root / "paced.lua").write_text(PACE.format(key=key,
                                                    delay_ms=1000 * connections // args.rate - 1))
        (root / "nginx.conf").write_text(NGINX.format(root=root, port=18081))
        servers = [subprocess.Popen(["nginx", "-c", str(root / "nginx.conf")]),
                   subprocess.Popen([str(CLI), "serve", "--port",
                                     "18082"], cwd=REPO, env=os.environ,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        targets = {"nginx": f"http://127.0.0.1:18081{page}",
                   "edge": "http://127.0.0.1:18082/api/v1/chains?limit=50"}
        try:
            for url in targets.values():
                wait_http(url)
            edge_rows = len(httpx.get(targets["edge"], headers={"X-API-Key": key}).json()["items"])
            nginx_rows = len(httpx.get(targets["nginx"]).json()["items"])
            assert edge_rows == nginx_rows == 50, (edge_rows, nginx_rows)
            results = {}
            for name, url in targets.items():
                results[name] = wrk(url, args.seconds, args.connections, root / "keyed.lua")
                print(json.dumps({"bench": "edge_page", "server": name, "rows": 50,
                                  "connections": args.connections, **results[name]}), flush=True)
            paced = wrk(targets["edge"], args.seconds, connections, root / "paced.lua")
            print(json.dumps({"bench": "edge_page_paced", "server": "edge",
                              "target_rate": args.rate, **paced}), flush=True)
            print(json.dumps({"bench": "edge_vs_nginx", "ratio": round(
                results["edge"]["requests_per_s"] / results["nginx"]["requests_per_s"], 3),
                "target_ratio": 0.4, "p99_ms_at_rate": paced["p99_ms"], "target_p99_ms": 10}))
        finally:
            for server in servers:
                server.terminate()
                server.wait(10)


if __name__ == "__main__":
    main()
