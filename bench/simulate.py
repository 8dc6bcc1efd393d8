"""Simulator throughput and peak memory: prints one JSON line per run."""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

RUN = """
import sys, time
from sources.lake import LakeWriter
from sources.simulator import SimulationConfig, simulate
t = time.perf_counter()
counts = simulate(SimulationConfig(swaps=int(sys.argv[2])), LakeWriter(sys.argv[1]))
print(counts["swaps"], time.perf_counter() - t)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--swaps", type=int, nargs="+", default=[1_000_000])
    for swaps in parser.parse_args().swaps:
        with tempfile.TemporaryDirectory() as lake:
            started = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", RUN, lake, str(swaps)],
                                 capture_output=True, text=True, check=True).stdout.split()
            peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            print(json.dumps({"bench": "simulate", "swaps_asked": swaps, "swaps_written": int(out[0]),
                              "simulate_seconds": round(float(out[1]), 1),
                              "process_seconds": round(time.perf_counter() - started, 1),
                              "peak_rss_gib": round(peak_kib / 2**20, 2)}), flush=True)


if __name__ == "__main__":
    main()
