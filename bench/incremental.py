"""A refresh after five minutes of live market against a full rebuild, side by side in one run:
prints one JSON line per lake size with `full_seconds` (the `everything` job: every product,
its checks and the snapshot, from an empty warehouse), `incremental_seconds` (the lake
sensor's `refresh` job after the live market appended five minutes at the simulator's rate:
the history ends at midnight, so these are the day's turn), their `ratio`, `steady_seconds`
and `steady_ratio` (the five minutes after, early in the new day),
`ranked_seconds` (the ranked wallet products made again at the watermark, as their own
cadence does every five minutes), and the orchestration's own cost measured on a job of as
many empty steps (`orchestration_seconds`), so that work and orchestration are not confused;
the bytes each publish wrote, the slowest steps of each run, and the peak resident memory of
each run and of each of its steps (`*_peak_rss_mb`, `*_step_peak_rss_mb`: each run in a fresh
process of its own, as the stack runs each run, sampled every 50 ms), and the most any of a
run's worker processes held (`workers_peak_rss_mb`), and of each publish the serving tables
the most was held for (`publish_table_peak_rss_mb`: from the publish's line before a table's
to its own). The lake is
simulated once per size and kept; its history ends at a fixed instant, so every run appends
the same minutes. Then the live market runs on to 23:50 of the new day and is refreshed, and
five minutes more give `late_seconds`: a refresh late in the day, whose day partitions hold a
day of swaps."""

import argparse
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pipelines  # noqa: F401  (the pipeline's process settings: before polars loads)

ROOT = Path(__file__).resolve().parent.parent
END = datetime(2026, 11, 20, tzinfo=UTC)
APPENDED = timedelta(minutes=5)
SLOWEST = 8
T = TypeVar("T")
# The publish's line for each serving table it stored (`Publisher`'s progress).
SERVING_TABLE = re.compile(r"^(\w+): \d+ rows \(serving table")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20
SAMPLE_S = 0.05


class Resident:
    """This process's resident memory (MiB) sampled every 50 ms on a thread of its own, and
    its peak (the kernel's high-water mark, reset on entering), so each step of an in-process
    run can be given the most it held while it ran; and the most any process it started (a
    step's worker processes) held at a sample (`workers_peak_mb`)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self.workers_peak_mb = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        with open("/proc/self/statm") as statm:
            while not self.stop.wait(SAMPLE_S):
                statm.seek(0)
                self.samples.append((time.time(), int(statm.read().split()[1]) * PAGE_MB))
                self.workers_peak_mb = max(self.workers_peak_mb, *_children_mb(), 0.0)

    def __enter__(self) -> "Resident":
        # 5 resets the peak resident set the kernel keeps (proc(5), clear_refs).
        Path("/proc/self/clear_refs").write_text("5")
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()

    def peak_mb(self) -> float:
        """The most this process held since entering, in MiB."""
        status = Path("/proc/self/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024

    def between(self, start: float, end: float) -> float:
        """The most any sample from `start` to `end` (epoch seconds) held, in MiB."""
        return max((mb for at, mb in self.samples if start <= at <= end + SAMPLE_S), default=0.0)


def _children_mb() -> list[float]:
    """The resident memory (MiB) of each process this one started."""
    held = []
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                held.append(int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_MB)
            except OSError:
                continue
    return held


def in_fresh_process(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in a new interpreter of its own, as the stack runs each run: what it
    holds is its own, not what the runs before left."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as process:
        return process.submit(function, *args).result()


def refresh(dagster_dir: Path, days: list[str] | None, job_name: str = "refresh",
            publish: bool = True) -> dict:
    """The job named `job_name` over `days` (and the later ones; None: a job of no day
    partitions), without its snapshot unless `publish`, run as a run of the stack runs, in a
    process of its own: its seconds, its steps, the seconds of its slowest steps, its peak
    resident memory and each step's."""
    return in_fresh_process(_run, str(dagster_dir), days, job_name, publish)


def _run(dagster_dir: str, days: list[str] | None, job_name: str, publish: bool) -> dict:
    import dagster as dg

    from assets.days import run_tags
    from pipelines.definitions import defs

    job = defs.resolve_job_def(job_name)
    chosen = None if publish else [key for key in job.asset_layer.selected_asset_keys
                                   if key != dg.AssetKey(["publish", "snapshot"])]
    with dg.instance_for_test(temp_dir=dagster_dir) as instance:
        started = time.perf_counter()
        with Resident() as resident:
            # Through the job's own executor, as the daemon's run runs it.
            result = dg.execute_job(
                dg.build_reconstructable_job("pipelines.definitions", "job_named",
                                             reconstructable_args=(job_name,)),
                instance, raise_on_error=True, asset_selection=chosen,
                run_config={"loggers": {"step_lines": {}}},
                tags={} if days is None else run_tags(instance, days))
        seconds = time.perf_counter() - started
        assert result.success
        begun: dict[str, float] = {}
        spent: dict[str, float] = {}
        peaks: dict[str, float] = {}
        tables: dict[str, float] = {}
        said: dict[str, float] = {}
        for entry in instance.all_logs(result.run_id):
            kind, step = entry.dagster_event_type, entry.step_key
            if step is None:
                continue
            if kind == dg.DagsterEventType.STEP_START:
                begun[step] = said[step] = entry.timestamp
            elif kind == dg.DagsterEventType.STEP_SUCCESS:
                spent[step] = entry.timestamp - begun[step]
                peaks[step] = resident.between(begun[step], entry.timestamp)
            elif kind is None and step in said:
                # The publish says each serving table once it is stored: what the process
                # held from its line before to it is that table's.
                table = SERVING_TABLE.match(entry.user_message)
                if table is not None:
                    tables[table[1]] = resident.between(said[step], entry.timestamp)
                said[step] = entry.timestamp
    slowest = dict(sorted(spent.items(), key=lambda kv: -kv[1])[:SLOWEST])
    return {"seconds": seconds, "steps": len(spent),
            "slowest": {k: round(v, 2) for k, v in slowest.items()},
            "peak_rss_mb": round(resident.peak_mb()),
            "workers_peak_rss_mb": round(resident.workers_peak_mb),
            "step_peak_rss_mb": {k: round(v) for k, v in
                                 sorted(peaks.items(), key=lambda kv: -kv[1])},
            "publish_table_peak_rss_mb": {k: round(v) for k, v in
                                          sorted(tables.items(), key=lambda kv: -kv[1])[:SLOWEST]}}


def orchestration(dagster_dir: Path, steps: int) -> float:
    """Seconds to run a job of `steps` empty steps in a chain, in a process of its own, on the
    same instance: what Dagster costs per run and per step, whatever the steps do."""
    return in_fresh_process(_empty, str(dagster_dir), steps)


def _empty(dagster_dir: str, steps: int) -> float:
    import dagster as dg

    @dg.op
    def nothing(previous: int | None = None) -> int:
        return 0

    @dg.job(executor_def=dg.in_process_executor)
    def empty() -> None:
        value = nothing.alias("step_0")()
        for i in range(1, steps):
            value = nothing.alias(f"step_{i}")(value)

    with dg.instance_for_test(temp_dir=dagster_dir) as instance:
        started = time.perf_counter()
        assert empty.execute_in_process(instance=instance).success
        return time.perf_counter() - started


def measure(swaps: int, home_root: Path, publish: bool = True) -> dict:
    from published import written, written_by_product

    from sources.lake import LakeWriter
    from sources.simulator import live_market

    home = home_root / str(swaps)
    pristine = home / "history"
    os.environ["CHAINTAPE_HOME"] = str(home)
    os.environ["DAGSTER_HOME"] = str(home / "dagster")
    os.environ["CHAINTAPE_LAKE"] = str(home / "lake")
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    if not pristine.exists():
        say(f"simulating {swaps:,} swaps up to {END:%Y-%m-%d} (once) ...")
        subprocess.run([str(Path(sys.executable).parent / "chaintape"), "simulate", "--swaps",
                        str(swaps), "--end", END.isoformat()], check=True, cwd=ROOT,
                       env={**os.environ, "CHAINTAPE_LAKE": str(pristine)})
    for name in ("lake", "warehouse", "store"):
        shutil.rmtree(home / name, ignore_errors=True)
    shutil.copytree(pristine, home / "lake")
    lake = LakeWriter(home / "lake")
    dagster_dir = home / "dagster"
    say("full rebuild: every product, its checks and the snapshot ...")
    rebuilt = refresh(dagster_dir, lake.days("swaps"), "everything", publish)
    full, steps = rebuilt["seconds"], rebuilt["steps"]
    version = lake.version("swaps")
    store = home / "store"
    full_bytes, _ = written(store) if publish else (0, 0)
    say(f"  {full:.1f}s over {steps} steps; appending {APPENDED} of live market ...")
    market = live_market.start(lake)
    appended = live_market.commit(lake, market, (END + APPENDED).timestamp())
    say(f"  {appended.get('swaps', 0)} swaps appended; refreshing ...")
    # What the lake sensor asks for: the days whose swaps changed.
    turn = refresh(dagster_dir, lake.changed_days("swaps", version), publish=publish)
    incremental = turn["seconds"]
    incremental_bytes, snapshot_bytes = written(store) if publish else (0, 0)
    incremental_written = written_by_product(store) if publish else {}
    # The next five minutes: the day's turn is behind, as for every refresh but one a day.
    version = lake.version("swaps")
    live_market.commit(lake, market, (END + 2 * APPENDED).timestamp())
    say(f"  {incremental:.1f}s; five more minutes, refreshing ...")
    after = refresh(dagster_dir, lake.changed_days("swaps", version), publish=publish)
    steady = after["seconds"]
    say(f"  {steady:.1f}s; ranking every wallet as of the watermark ...")
    ranked = refresh(dagster_dir, None, "wallet_rankings_refresh")
    say(f"  {ranked['seconds']:.1f}s; the same number of empty steps ...")
    overhead = orchestration(dagster_dir, steps)
    # Late in the day: the watermark's day holds most of a day of swaps, which each refresh
    # of that day's partitions makes again; five minutes after 23:50 is the dearest refresh.
    late_from = END + timedelta(days=1) - 2 * APPENDED
    version = lake.version("swaps")
    say(f"  {overhead:.1f}s; the live market up to {late_from:%H:%M} of the new day ...")
    caught = live_market.commit(lake, market, late_from.timestamp())
    say(f"  {caught.get('swaps', 0)} swaps appended; refreshing ...")
    refresh(dagster_dir, lake.changed_days("swaps", version), publish=publish)
    version = lake.version("swaps")
    live_market.commit(lake, market, (late_from + APPENDED).timestamp())
    say("  five more minutes, refreshing ...")
    late = refresh(dagster_dir, lake.changed_days("swaps", version), publish=publish)
    return {"bench": "incremental", "swaps": swaps, "published": publish, "steps": steps,
            "appended_swaps": appended.get("swaps", 0), "full_seconds": round(full, 1),
            "incremental_seconds": round(incremental, 1),
            "ratio": round(incremental / full, 3),
            "orchestration_seconds": round(overhead, 1),
            "incremental_slowest_steps": turn["slowest"],
            "full_publish_bytes": full_bytes, "incremental_publish_bytes": incremental_bytes,
            "snapshot_bytes": snapshot_bytes,
            "incremental_written": incremental_written,
            "work_ratio": round(max(incremental - overhead, 0.0) / max(full - overhead, 1e-9), 3),
            "steady_seconds": round(steady, 1), "steady_ratio": round(steady / full, 3),
            "steady_slowest_steps": after["slowest"],
            "late_seconds": round(late["seconds"], 1),
            "late_ratio": round(late["seconds"] / full, 3),
            "late_slowest_steps": late["slowest"],
            "late_peak_rss_mb": late["peak_rss_mb"],
            "ranked_seconds": round(ranked["seconds"], 1),
            "ranked_ratio": round(ranked["seconds"] / full, 3),
            "ranked_steps": ranked["slowest"],
            "full_peak_rss_mb": rebuilt["peak_rss_mb"],
            "incremental_peak_rss_mb": turn["peak_rss_mb"],
            "steady_peak_rss_mb": after["peak_rss_mb"],
            "ranked_peak_rss_mb": ranked["peak_rss_mb"],
            # The most a step's worker process held (the wallet books' pieces of a big chain).
            "workers_peak_rss_mb": {"full": rebuilt["workers_peak_rss_mb"],
                                    "incremental": turn["workers_peak_rss_mb"],
                                    "steady": after["workers_peak_rss_mb"],
                                    "ranked": ranked["workers_peak_rss_mb"],
                                    "late": late["workers_peak_rss_mb"]},
            "full_step_peak_rss_mb": rebuilt["step_peak_rss_mb"],
            "incremental_step_peak_rss_mb": turn["step_peak_rss_mb"],
            "steady_step_peak_rss_mb": after["step_peak_rss_mb"],
            "late_step_peak_rss_mb": late["step_peak_rss_mb"],
            "ranked_step_peak_rss_mb": ranked["step_peak_rss_mb"],
            "publish_table_peak_rss_mb": {"full": rebuilt["publish_table_peak_rss_mb"],
                                          "incremental": turn["publish_table_peak_rss_mb"],
                                          "steady": after["publish_table_peak_rss_mb"],
                                          "late": late["publish_table_peak_rss_mb"]},
            "steady_written": written_by_product(store) if publish else {},
            "targets": {"work_ratio": round(1 / 30, 3), "ratio": 0.1, "turn_ratio": 0.2,
                        "peak_rss_mb": 2048}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--swaps", type=int, nargs="+", default=[1_000_000],
                        help="lake sizes, e.g. 1000000 10000000")
    parser.add_argument("--home", type=Path, default=ROOT / "var" / "bench-incremental")
    parser.add_argument("--without-publish", action="store_true",
                        help="every run without its snapshot: the products alone")
    args = parser.parse_args()
    if len(args.swaps) == 1:
        print(json.dumps(measure(args.swaps[0], args.home, not args.without_publish)),
              flush=True)
        return
    # Each size in a process of its own: the pipeline's resources take their paths from the
    # environment once, when its definitions load.
    for swaps in args.swaps:
        subprocess.run([sys.executable, __file__, "--swaps", str(swaps), "--home",
                        str(args.home), *(["--without-publish"] if args.without_publish else [])],
                       check=True)


if __name__ == "__main__":
    main()
