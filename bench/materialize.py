"""A domain's products against one polars scan of the raw swaps, side by side in one run: prints
one JSON line (seconds of each and their ratio, the domain's target ratio, and the user and
kernel CPU and page faults of two scans and of the products). The scan's seconds are the median
of three scans, two before the products and one after. The products a domain reads from other
domains are materialised first, untimed, when missing."""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pipelines  # noqa: F401  (the pipeline's process settings: before polars loads)

ROOT = Path(__file__).resolve().parent.parent
# Per domain: the asset groups timed, single assets of other groups they include, and the
# target ratio to one scan.
DOMAINS = {
    "market": (("market",), (), 8),
    "wallets": (("wallets",), (), 8),
    "boards": (("boards", "farms", "perps"), (), 3),
}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def usage() -> tuple[float, float, int]:
    """The process's user and kernel CPU seconds so far, and its page faults (minor: memory
    touched for the first time, or mapped again)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_minflt


def spent(before: tuple[float, float, int]) -> dict:
    """User and kernel seconds and page faults since `before` (from `usage`)."""
    after = usage()
    return {"user_s": round(after[0] - before[0], 1), "kernel_s": round(after[1] - before[1], 1),
            "page_faults": after[2] - before[2]}


def scan_seconds(lake: Path) -> float:
    """One scan-and-aggregate over every raw swap: per pair, swaps, amounts and makers."""
    import polars as pl

    from sources.lake import LakeReader

    started = time.perf_counter()
    (LakeReader(lake).scan("swaps")
     .group_by("chain_id", "pair")
     .agg(pl.len(), *[pl.col(c).cast(pl.Float64).sum() for c in
                      ("amount0_in", "amount1_in", "amount0_out", "amount1_out")],
          pl.col("maker").n_unique(), pl.col("block_time").max())
     .collect())
    return time.perf_counter() - started


def _run(keys: list) -> tuple[float, dict[str, float], dict]:
    import dagster as dg

    from assets.days import run_tags
    from pipelines.definitions import defs
    from sources.lake import LakeReader

    job = defs.resolve_job_def("everything")
    instance = dg.DagsterInstance.ephemeral()
    # Every day of the lake, as `chaintape materialize` asks for them.
    tags = run_tags(instance, LakeReader(os.environ["CHAINTAPE_HOME"] + "/lake").days("swaps"))
    started, before = time.perf_counter(), usage()
    # One line per finished step and check on stderr, as `chaintape materialize` shows them.
    result = job.execute_in_process(instance=instance, tags=tags,
                                    asset_selection=keys, raise_on_error=True,
                                    run_config={"loggers": {"step_lines": {}}})
    assert result.success
    elapsed, cpu = time.perf_counter() - started, spent(before)
    steps = {e.step_key: e.event_specific_data.duration_ms / 1000 for e in result.all_events
             if e.event_type_value == "STEP_SUCCESS"}
    return elapsed, dict(sorted(((k, round(v, 1)) for k, v in steps.items()),
                                key=lambda kv: -kv[1])), cpu


def selections(domain: str) -> tuple[list, list]:
    """The domain's asset keys, and the non-lake assets upstream of them."""
    import dagster as dg

    from pipelines.definitions import defs

    groups, extra, _ = DOMAINS[domain]
    graph = defs.resolve_asset_graph()
    selection = dg.AssetSelection.groups(*groups) | dg.AssetSelection.assets(
        *[dg.AssetKey(list(k)) for k in extra])
    keys = selection.resolve(graph)
    upstream = (selection.upstream() - selection - dg.AssetSelection.groups("lake")).resolve(graph)
    return list(keys), list(upstream)


def products_seconds(domain: str) -> tuple[float, dict[str, float], dict]:
    """Materialise the domain's products from nothing, blocking checks included, as the
    pipeline does; also each step's seconds, longest first, and the CPU spent (`spent`).
    Missing upstream products are made first, untimed; the domain's own are deleted first, so
    that nothing an earlier run kept (a frozen season) is carried over."""
    import shutil

    from deltalake import DeltaTable

    from assets.tables import default_root

    keys, upstream = selections(domain)
    if any(not DeltaTable.is_deltatable(f"{default_root()}/{k.path[-1]}") for k in upstream):
        say(f"materialising {len(upstream)} upstream products first (untimed) ...")
        _run(upstream)
    for key in keys:
        shutil.rmtree(Path(default_root()) / key.path[-1], ignore_errors=True)
    say(f"materialising the {domain} products ...")
    return _run(keys)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--swaps", type=int, default=10_000_000)
    parser.add_argument("--domain", choices=sorted(DOMAINS), default="market")
    parser.add_argument("--home", type=Path, default=ROOT / "var" / "bench-materialize",
                        help="kept between runs: the lake is simulated once per size")
    args = parser.parse_args()
    home = args.home / f"{args.swaps}"
    os.environ["CHAINTAPE_HOME"] = str(home)
    os.environ["DAGSTER_HOME"] = str(home / "dagster")
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    lake = home / "lake"
    if not (lake / "_progress.json").exists():
        say(f"simulating {args.swaps:,} swaps into {lake} (once) ...")
        subprocess.run([str(Path(sys.executable).parent / "chaintape"), "simulate", "--swaps",
                        str(args.swaps), "--end", "2026-11-20T00:00:00+00:00"], check=True,
                       cwd=ROOT)
    say("scanning every raw swap (twice before the products, once after) ...")
    before = usage()
    scans = [scan_seconds(lake), scan_seconds(lake)]
    scan_cpu = spent(before)
    say(f"scans: {', '.join(f'{s:.1f}s' for s in scans)}")
    products, steps, products_cpu = products_seconds(args.domain)
    scans.append(scan_seconds(lake))
    # The machine's speed drifts over a run; the middle of three scans taken around the
    # products is the one figure least moved by a slow or fast moment.
    scan = statistics.median(scans)
    import polars as pl

    from sources.lake import LakeReader

    swaps = LakeReader(lake).scan("swaps").select(pl.len()).collect().item()
    print(json.dumps({"bench": f"materialize_{args.domain}", "swaps": swaps,
                      "scan_seconds": round(scan, 1),
                      "scans_seconds": [round(s, 2) for s in scans],
                      "products_seconds": round(products, 1),
                      "ratio": round(products / scan, 2), "target_ratio": DOMAINS[args.domain][2],
                      "two_scans_cpu": scan_cpu, "products_cpu": products_cpu,
                      "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                            / 2**20, 2), "steps": steps}), flush=True)


if __name__ == "__main__":
    main()
