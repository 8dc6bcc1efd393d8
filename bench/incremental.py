"""A refresh after five minutes of live market against a full rebuild, side by side in one run:
prints one JSON line per lake size with `full_seconds` (every product, its checks and the
snapshot, from an empty warehouse), `incremental_seconds` (the same job after the live market
appended five minutes at the simulator's rate: the history ends at midnight, so these are the
day's turn), their `ratio`, `steady_seconds` and `steady_ratio` (the five minutes after, as
every other refresh of a day), and the orchestration's own cost measured on a job of as many
empty steps (`orchestration_seconds`), so that work and orchestration are not confused; the
bytes each publish wrote, and the slowest steps of each refresh. The lake is simulated once per
size and kept; its history ends at a fixed instant, so every run appends the same minutes."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pipelines  # noqa: F401  (the pipeline's process settings: before polars loads)

ROOT = Path(__file__).resolve().parent.parent
END = datetime(2026, 11, 20, tzinfo=UTC)
APPENDED = timedelta(minutes=5)
SLOWEST = 8


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def refresh(instance, days: list[str]) -> tuple[float, int, dict[str, float]]:
    """Seconds to run the `everything` job over `days` (and the later ones), its steps, and
    the seconds of its slowest steps."""
    import dagster as dg

    from assets.days import run_tags
    from pipelines.definitions import defs

    job = defs.resolve_job_def("everything")
    started = time.perf_counter()
    result = job.execute_in_process(instance=instance, raise_on_error=True,
                                    run_config={"loggers": {"step_lines": {}}},
                                    tags=run_tags(instance, days))
    assert result.success
    spent: dict[str, float] = {}
    for entry in instance.all_logs(result.run_id):
        kind = entry.dagster_event_type
        if kind in (dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS):
            sign = -1 if kind == dg.DagsterEventType.STEP_START else 1
            spent[entry.step_key] = spent.get(entry.step_key, 0.0) + sign * entry.timestamp
    slowest = dict(sorted(spent.items(), key=lambda kv: -kv[1])[:SLOWEST])
    return time.perf_counter() - started, len(spent), {k: round(v, 2) for k, v in slowest.items()}


def orchestration(instance, steps: int) -> float:
    """Seconds to run a job of `steps` empty steps in a chain, in process, on the same
    instance: what Dagster costs per run and per step, whatever the steps do."""
    import dagster as dg

    @dg.op
    def nothing(previous: int | None = None) -> int:
        return 0

    @dg.job(executor_def=dg.in_process_executor)
    def empty() -> None:
        value = nothing.alias("step_0")()
        for i in range(1, steps):
            value = nothing.alias(f"step_{i}")(value)

    started = time.perf_counter()
    assert empty.execute_in_process(instance=instance).success
    return time.perf_counter() - started


def measure(swaps: int, home_root: Path) -> dict:
    import dagster as dg
    from published import written, written_by_product

    from sources.lake import Lake
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
    lake = Lake(home / "lake")
    with dg.instance_for_test(temp_dir=str(home / "dagster")) as instance:
        say("full rebuild: every product, its checks and the snapshot ...")
        full, steps, _ = refresh(instance, lake.days("swaps"))
        version = lake.version("swaps")
        full_bytes, _ = written(home / "store")
        say(f"  {full:.1f}s over {steps} steps; appending {APPENDED} of live market ...")
        market = live_market.start(lake)
        appended = live_market.commit(lake, market, (END + APPENDED).timestamp())
        say(f"  {appended.get('swaps', 0)} swaps appended; refreshing ...")
        # What the lake sensor asks for: the days whose swaps changed.
        incremental, _, slowest = refresh(instance, lake.changed_days("swaps", version))
        incremental_bytes, snapshot_bytes = written(home / "store")
        incremental_written = written_by_product(home / "store")
        # The next five minutes: the day's turn is behind, as for every refresh but one a day.
        version = lake.version("swaps")
        live_market.commit(lake, market, (END + 2 * APPENDED).timestamp())
        say(f"  {incremental:.1f}s; five more minutes, refreshing ...")
        steady, _, steady_slowest = refresh(instance, lake.changed_days("swaps", version))
        say(f"  {steady:.1f}s; the same number of empty steps ...")
        overhead = orchestration(instance, steps)
    return {"bench": "incremental", "swaps": swaps, "steps": steps,
            "appended_swaps": appended.get("swaps", 0), "full_seconds": round(full, 1),
            "incremental_seconds": round(incremental, 1),
            "ratio": round(incremental / full, 3),
            "orchestration_seconds": round(overhead, 1),
            "incremental_slowest_steps": slowest,
            "full_publish_bytes": full_bytes, "incremental_publish_bytes": incremental_bytes,
            "snapshot_bytes": snapshot_bytes,
            "incremental_written": incremental_written,
            "work_ratio": round(max(incremental - overhead, 0.0) / max(full - overhead, 1e-9), 3),
            "steady_seconds": round(steady, 1), "steady_ratio": round(steady / full, 3),
            "steady_slowest_steps": steady_slowest,
            "steady_written": written_by_product(home / "store"),
            "targets": {"work_ratio": round(1 / 30, 3), "ratio": 0.1}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--swaps", type=int, nargs="+", default=[1_000_000],
                        help="lake sizes, e.g. 1000000 10000000")
    parser.add_argument("--home", type=Path, default=ROOT / "var" / "bench-incremental")
    args = parser.parse_args()
    if len(args.swaps) == 1:
        print(json.dumps(measure(args.swaps[0], args.home)), flush=True)
        return
    # Each size in a process of its own: the pipeline's resources take their paths from the
    # environment once, when its definitions load.
    for swaps in args.swaps:
        subprocess.run([sys.executable, __file__, "--swaps", str(swaps), "--home",
                        str(args.home)], check=True)


if __name__ == "__main__":
    main()
