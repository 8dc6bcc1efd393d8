"""Load for the edge benches: wrk runs, at full speed or paced to a rate, and an API key that
metering admits at any rate."""

import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"

# What a paced run adds to its script: wrk waits this long after each answer.
DELAY = "function delay() return {delay_ms} end\n"
KEYED = """wrk.headers["X-API-Key"] = "{key}"
"""
# A keyed walk of `paths`, round-robin.
ROUND_ROBIN = """wrk.headers["X-API-Key"] = "{key}"
paths = {{{paths}}}
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
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


def paced(url: str, seconds: int, rate: int, script: str = "", connections: int = 50) -> dict:
    """wrk running the Lua `script` at `rate` requests/s: each connection waits between an answer
    and its next call its share of a second less what a call took in a 5 s trial first. Also
    the connections and the wait."""

    def run(run_seconds: int, delay_ms: int) -> dict:
        with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
            lua.write(script + DELAY.format(delay_ms=delay_ms))
            lua.flush()
            return wrk(url, run_seconds, connections, Path(lua.name))

    share = round(connections * 1000 / rate)
    took = connections * 1000 / run(5, share)["requests_per_s"] - share
    # Whole milliseconds: rounding down keeps the rate at or just above the one asked.
    delay = max(0, math.floor(connections * 1000 / rate - took))
    return {**run(seconds, delay), "connections": connections, "delay_ms": delay}


def internal_key(env: dict) -> str:
    """A fresh `internal`-plan API key in the home `env` names."""
    return subprocess.run([str(CLI), "keys", "create", "--name", "bench", "--plan", "internal"],
                          capture_output=True, text=True, check=True, cwd=REPO,
                          env=env).stdout.strip()


