"""Automation: a refresh whenever the lake has new complete batches, the cadence schedules, and
the lake's maintenance."""

import json
import os
from typing import Any

import dagster as dg
import polars as pl

from assets.days import RANGE_START, run_tags
from assets.domains import key, product_key
from assets.tables import DAY_TABLES
from assets.wallets.assets import RANKED
from assets.warehouse import Warehouse
from pipelines.resources import resources
from sources.lake import TABLES, LakeMaintenance, LakeReader

# What `dg.define_asset_job` returns: Dagster does not export its type, and a private module's
# name would tie this module to one Dagster version.
AssetJob = Any

CADENCES = {
    "every_5_minutes": ("*/5 * * * *", ["market", "chains", "oracle", "publish"]),
}
# How often the sensor looks at the lake: the market products' cadence is a minute, and a
# refresh takes part of it ($CHAINTAPE_LAKE_POLL_SECONDS sets another).
LAKE_POLL_S = int(os.environ.get("CHAINTAPE_LAKE_POLL_SECONDS", "20"))
MAINTENANCE_CRON = "*/10 * * * *"
# The ranked wallet products' cadence: every wallet's figures move with every price, so they
# are ranked at most five minutes behind the lake, and say the watermark they rank as of.
RANKINGS_CRON = "*/5 * * * *"
BUSY = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
        dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
UNFINISHED = (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


# The days a cadence refresh makes again: the lake's last two (a chain that trails the clock
# still writes yesterday's blocks for a while after midnight).
CADENCE_DAYS = 2


def schedules() -> tuple[list, list[dg.ScheduleDefinition]]:
    """The cadence jobs and their schedules (stopped until switched on in the UI)."""
    jobs, scheds = [], []
    for name, (cron, groups) in CADENCES.items():
        job = dg.define_asset_job(f"refresh_{name}",
                                  selection=dg.AssetSelection.groups(*groups),
                                  executor_def=dg.in_process_executor)
        jobs.append(job)
        scheds.append(dg.ScheduleDefinition(
            name=f"refresh_{name}_schedule", job=job, cron_schedule=cron,
            execution_timezone="UTC", execution_fn=_latest_days))
    return jobs, scheds


def refresh_job(executor: dg.ExecutorDefinition) -> AssetJob:
    """What the lake sensor runs at each new batch: every product but the ranked wallet
    products (`RANKED`), its checks, and the snapshot, which publishes the ranked products as
    their last ranking stored them."""
    return dg.define_asset_job(
        "refresh", selection=dg.AssetSelection.all() - _ranked(), executor_def=executor,
        description="Every product but the ranked wallet products, over the days whose lake "
        "rows changed, then the snapshot: what the lake sensor runs at each new batch.")


def _ranked() -> dg.AssetSelection:
    return dg.AssetSelection.assets(*(product_key(name) for name in RANKED))


def rankings() -> tuple[AssetJob, dg.ScheduleDefinition]:
    """The ranked wallet products (every wallet's positions marked, rounds, traits, window
    records, profiles and rankings) made again from the stored ledger at the lake's watermark, every
    five minutes when the watermark moved since their last ranking; the next snapshot
    publishes them."""
    job = dg.define_asset_job(
        "wallet_rankings_refresh", selection=_ranked(), executor_def=dg.in_process_executor,
        description="Every wallet's positions marked, rounds, traits, window records, profile "
        "and ranking rows, as of the lake's watermark: what moves with prices and time alone, and "
        "what only they read, on a cadence of its own.")
    schedule = dg.ScheduleDefinition(
        name="wallet_rankings_every_5_minutes", job=job, cron_schedule=RANKINGS_CRON,
        execution_timezone="UTC", execution_fn=_unranked,
        default_status=dg.DefaultScheduleStatus.RUNNING)
    return job, schedule


def _unranked(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    """A ranking run when the warehouse's watermark is newer than the one the stored rankings
    rank as of (run key: that watermark, so it is ranked once)."""
    warehouse: Warehouse = resources()["warehouse"]
    if not warehouse.exists("as_of") or not warehouse.exists("wallet_rankings"):
        return dg.SkipReason("nothing materialised yet: the first refresh ranks too")
    watermark = warehouse.clock()["as_of"]
    stored = warehouse.scan("wallet_rankings")
    ranked = (stored.select(pl.col("as_of").max()).collect().item()
              if "as_of" in stored.collect_schema() else None)
    if ranked is not None and ranked >= watermark:
        return dg.SkipReason(f"the rankings are as of {watermark.isoformat()} already")
    return dg.RunRequest(run_key=watermark.isoformat(),
                         tags={"chaintape/watermark": watermark.isoformat()})


def _latest_days(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    days = LakeReader().days("swaps")[-CADENCE_DAYS:]
    if not days:
        return dg.SkipReason("the lake has no swaps yet")
    return dg.RunRequest(tags=run_tags(context.instance, days))


def _behind(meta: dict) -> dict[str, int]:
    """How far a chain follower's last batch stands behind the chain's head, in blocks."""
    if "head_block" not in meta or "next_block" not in meta:
        return {}
    return {"head_block": int(meta["head_block"]),
            "blocks_behind_head": max(0, int(meta["head_block"]) - int(meta["next_block"]) + 1)}


def lake_sensor(job: str) -> dg.SensorDefinition:
    """Starts the job named `job` when the lake's last complete batch is newer than the last
    refresh asked for, unless a refresh is still queued or running (it will pick the new batch
    up next). Each lake table whose Delta version moved is observed with its new version, so the
    UI shows which version of every table the lake stands at."""

    @dg.sensor(name="lake_updates", job_name=job, minimum_interval_seconds=LAKE_POLL_S,
               default_status=dg.DefaultSensorStatus.RUNNING)
    def lake_updates(context: dg.SensorEvaluationContext):
        progress = LakeReader().progress()
        if progress is None:
            return dg.SkipReason("the lake has no complete batch yet")
        watermark = progress.watermark.isoformat()
        seen = json.loads(context.cursor) if context.cursor else {}
        if seen.get("watermark") == watermark:
            return dg.SkipReason(f"nothing new since {watermark}")
        busy = context.instance.get_runs(
            dg.RunsFilter(job_name=job, statuses=BUSY), limit=1)
        if busy:
            return dg.SkipReason(f"a refresh is under way ({busy[0].run_id[:8]})")
        before = seen.get("versions", {})
        pinned = LakeReader(versions=progress.versions)
        days = changed_partitions(pinned, before)
        context.update_cursor(json.dumps({"watermark": watermark,
                                          "versions": progress.versions}))
        observed = [dg.AssetObservation(
            asset_key=key(name), metadata={"delta_version": version, "watermark": watermark,
                                           "writer": progress.writer, **_behind(progress.meta)})
            for name, version in sorted(progress.versions.items())
            if before.get(name) != version]
        # The days whose swaps changed, and the later ones, are made again; the rest are read.
        # So are the days a product made a day at a time lacks beside the others (one new to
        # this warehouse): its readers would fail on them.
        # So are the days of the last refresh if it did not finish: the cursor moved on when
        # it was asked for, so its changes would otherwise wait for the next on the same days.
        held = set(pinned.days_made("swaps"))
        unmade = [day for day in [*resources()["warehouse"].unmade_days(),
                                  *unfinished(context.instance, job)] if day in held]
        days = sorted({*days, *unmade}) or pinned.days_made("swaps")[-1:]
        tags = run_tags(context.instance, days)
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=watermark,
                                        tags={"chaintape/watermark": watermark, **tags})],
            asset_events=observed)

    return lake_updates


def unfinished(instance: dg.DagsterInstance, job: str) -> list[str]:
    """The first day of the job's last run if it failed or was stopped (a run killed is failed
    by its code server, or by `up` when the code server went with it), else nothing."""
    last = instance.get_runs(dg.RunsFilter(job_name=job), limit=1)
    if last and last[0].status in UNFINISHED and RANGE_START in last[0].tags:
        return [last[0].tags[RANGE_START]]
    return []


def changed_partitions(lake: LakeReader, before: dict[str, int]) -> list[str]:
    """The day partitions a change since the table versions `before` makes again: each day of
    swaps whose date changed in a table read a day at a time, or which takes a changed date
    without swaps (the first day of swaps on or after it); a date no swap has reached yet is
    taken by the day that first does."""
    days = lake.days("swaps")
    changed = {date for table in DAY_TABLES for date in lake.changed_days(table, before.get(table))}
    return sorted({next(day for day in days if day >= date) for date in changed
                   if days and date <= days[-1]})


@dg.op
def maintain_lake(context: dg.OpExecutionContext) -> None:
    """Compact crowded partitions, then vacuum files past the retention window, table by
    table."""
    lake = LakeMaintenance(LakeReader())
    for name in TABLES:
        compacted = lake.compact(name)
        deleted = lake.vacuum(name)
        if compacted or deleted:
            context.log.info(f"{name}: {compacted} partitions compacted, "
                             f"{len(deleted)} files vacuumed")


@dg.op
def maintain_warehouse(context: dg.OpExecutionContext, warehouse: Warehouse) -> None:
    """Vacuum every product's versions past the warehouse's retention window, and the files of
    writes that never committed."""
    for name in warehouse.products():
        deleted = warehouse.maintain(name)
        if deleted:
            context.log.info(f"{name}: {len(deleted)} files vacuumed")


@dg.job(name="lake_maintenance", description="Compacts the lake's small files and vacuums "
        "the lake's and the warehouse's versions past their retention windows.")
def lake_maintenance() -> None:
    """The lake's and the warehouse's maintenance."""
    maintain_lake()
    maintain_warehouse()


maintenance_schedule = dg.ScheduleDefinition(
    job=lake_maintenance, cron_schedule=MAINTENANCE_CRON, execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING)
