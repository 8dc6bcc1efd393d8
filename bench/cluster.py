"""The pipeline on two Celery workers against one process, side by side on the same lake, and
what one worker sustains per product family: prints JSON lines.

A week's lake of `--swaps` swaps is simulated once; then `chaintape materialize` builds every
product in one process, and again with CHAINTAPE_EXECUTOR=celery on `--workers` workers (the
instance on a fresh Postgres database, a redis-server broker on a spare port). Each step's time
comes from the run's Dagster step stats: summed by product family, with the swaps of the lake,
it gives the swaps per second one worker sustains for that family. The two are run `--rounds`
times, alternated, and the ratio is that of their medians. Each worker's peak memory is
sampled every 200 ms over the processes of its session (its pool's children run the steps):
the largest one process held (`worker_peak_rss_mb`) and the most all of them held at once
(`worker_tree_peak_rss_mb`). `--lake` takes a simulated history (copied) instead of making
one. When a run fails, its scratch directory (the lake, each run's Dagster home) and the
workers' run's Postgres database are kept and named."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from processes import session_processes  # noqa: E402

from tests.conftest import free_port  # noqa: E402


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cli(args: list[str], env: dict) -> float:
    """Run a chaintape command; its wall time."""
    began = time.perf_counter()
    done = subprocess.run([str(BIN / "chaintape"), *args], env=env, capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(f"chaintape {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - began


def families(dagster_home: Path) -> dict[str, float]:
    """Seconds spent per product family (the step key's first part) in the last run."""
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        run = instance.get_runs(limit=1)[0]
        spent: dict[str, float] = defaultdict(float)
        for stat in instance.get_run_step_stats(run.run_id):
            if stat.start_time and stat.end_time:
                spent[stat.step_key.split("__")[0]] += stat.end_time - stat.start_time
    return dict(spent)


def in_process(base: dict, home: Path) -> tuple[float, dict[str, float]]:
    """Materialise every product in one process; its wall time and seconds per family."""
    seconds = cli(["materialize"], {**base, "CHAINTAPE_HOME": str(home),
                                    "DAGSTER_HOME": str(home / "dagster")})
    return seconds, families(home / "dagster")




class SessionPeaks:
    """The peak resident memory (MiB) of the processes of each of these sessions (a worker
    and its pool's children), sampled every 200 ms on a thread of its own: the largest one
    process held, and the most the session held at once."""

    def __init__(self, sessions: list[int]) -> None:
        self.sessions = sessions
        self.largest = [0.0] * len(sessions)
        self.together = [0.0] * len(sessions)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        while not self.stop.wait(0.2):
            for n, sid in enumerate(self.sessions):
                # This bench and its children are listed with every session: only the
                # session's leader among them is the session's.
                held = [p.rss_bytes / 2**20 for p in session_processes(sid, ()).values()
                        if os.getpid() not in (p.pid, p.parent) or p.pid == sid]
                self.largest[n] = max(self.largest[n], *held, 0.0)
                self.together[n] = max(self.together[n], sum(held))

    def __enter__(self) -> "SessionPeaks":
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def on_workers(base: dict, home: Path, workers: int
               ) -> tuple[float, dict[str, float], list[int], SessionPeaks]:
    """Materialise every product on `workers` Celery workers (a redis-server broker on a spare
    port, the instance on a fresh Postgres database); its wall time, seconds per family, the
    steps each worker ran and each worker's peak memory."""
    port = free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    database = f"chaintape_bench_{uuid.uuid4().hex[:12]}"
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-c"]
    subprocess.run([*psql, f"CREATE DATABASE {database}"], check=True, capture_output=True)
    (home / "dagster").mkdir(parents=True)
    (home / "dagster" / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\nstorage:\n  postgres:\n    postgres_url: "
        f"postgresql+psycopg2://postgres@127.0.0.1:5432/{database}\n")
    env = {**base, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "CHAINTAPE_EXECUTOR": "celery", "CHAINTAPE_CELERY_BROKER": broker}
    started = []
    try:
        for n in range(workers):
            with open(home / f"worker{n}.log", "w") as out:
                started.append(subprocess.Popen(
                    [str(BIN / "chaintape"), "worker", "--name", f"w{n}@bench"], env=env,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        while not all("ready." in (home / f"worker{n}.log").read_text()
                      for n in range(workers)):
            # A worker that ended before it was ready would be waited for for ever.
            ended = [n for n, worker in enumerate(started) if worker.poll() is not None]
            if ended:
                raise RuntimeError(f"worker{ended[0]} ended before it was ready: see "
                                   f"{home / f'worker{ended[0]}.log'}")
            time.sleep(0.2)
        with SessionPeaks([worker.pid for worker in started]) as peaks:
            seconds = cli(["materialize"], env)
        spent = families(home / "dagster")
        ran = [(home / f"worker{n}.log").read_text().count("succeeded in")
               for n in range(workers)]
    except BaseException:
        say(f"the run's records are kept in the Postgres database {database}")
        raise
    finally:
        for worker in started:
            os.killpg(worker.pid, 15)
            worker.wait(30)
        redis.terminate()
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"],
                   capture_output=True)
    return seconds, spent, ran, peaks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--swaps", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lake", type=Path, default=None,
                        help="a simulated history to copy instead of simulating one")
    parser.add_argument("--rounds", type=int, default=3,
                        help="in-process and on-workers runs, alternated; the ratio is their "
                             "median's (one run on a shared 2-core machine varies by ~20%%)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        measure(args, root)
    except BaseException:
        # What failed is in the runs' Dagster records under it: kept, and said where.
        say(f"kept for a look: {root}")
        raise
    shutil.rmtree(root)


def measure(args: argparse.Namespace, root: Path) -> None:
    """Simulate or copy the lake under `root`, then the rounds, printing their JSON lines."""
    lake = root / "lake"
    base = {**os.environ, "CHAINTAPE_LAKE": str(lake)}
    if args.lake is not None:
        say(f"copying the history in {args.lake}")
        shutil.copytree(args.lake, lake)
    else:
        say(f"simulating a week of {args.swaps:,} swaps")
        cli(["simulate", "--swaps", str(args.swaps), "--end", "2026-11-20T00:00:00+00:00"],
            {**base, "CHAINTAPE_HOME": str(root / "sim")})
    rounds: list[dict[str, Any]] = []
    for n in range(args.rounds):
        say(f"round {n + 1}/{args.rounds}: materialising in one process")
        local_s, local_families = in_process(base, root / f"in-process-{n}")
        say(f"round {n + 1}/{args.rounds}: materialising on {args.workers} Celery workers")
        cluster_s, cluster_families, ran, peaks = on_workers(base, root / f"cluster-{n}",
                                                             args.workers)
        rounds.append({"in_process_seconds": round(local_s, 1),
                       "celery_seconds": round(cluster_s, 1),
                       "ratio": round(cluster_s / local_s, 2), "steps_per_worker": ran,
                       "worker_peak_rss_mb": [round(mb) for mb in peaks.largest],
                       "worker_tree_peak_rss_mb": [round(mb) for mb in peaks.together]})
        say(json.dumps(rounds[-1]))
    local_med = statistics.median(r["in_process_seconds"] for r in rounds)
    cluster_med = statistics.median(r["celery_seconds"] for r in rounds)
    print(json.dumps({
        "bench": "cluster", "swaps": args.swaps, "workers": args.workers,
        "rounds": rounds, "in_process_seconds": local_med, "celery_seconds": cluster_med,
        "ratio": round(cluster_med / local_med, 2),
        "ratio_median_of_rounds": statistics.median(r["ratio"] for r in rounds),
        "worker_peak_rss_mb": max(max(r["worker_peak_rss_mb"]) for r in rounds),
        "target_ratio": 1.3, "target_worker_peak_rss_mb": 2048}), flush=True)
    print(json.dumps({
        "bench": "cluster", "stage": "capacity", "swaps": args.swaps,
        "family_seconds_in_process": {k: round(v, 1) for k, v in
                                      sorted(local_families.items())},
        "family_seconds_on_workers": {k: round(v, 1) for k, v in
                                      sorted(cluster_families.items())},
        "swaps_per_second_one_worker": {
            k: round(args.swaps / v) for k, v in sorted(local_families.items()) if v > 0}}),
        flush=True)


if __name__ == "__main__":
    main()
