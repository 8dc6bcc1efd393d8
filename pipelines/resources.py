"""Resources from the environment; with nothing set, everything lives under ./var/."""

import os
from pathlib import Path

import dagster as dg

from assets.snapshot.assets import Store
from assets.tables import default_root as warehouse_root
from assets.warehouse import Warehouse
from core.store import default_url
from pipelines.threads import threads_executor
from sources.lake import LakeReader


def resources() -> dict:
    """The resources every asset and check may ask for."""
    return {
        "warehouse": Warehouse(lake_root=LakeReader().root,
                               root=_absolute(warehouse_root())),
        "store": Store(url=_absolute(default_url())),
    }


def _absolute(url: str) -> str:
    return url if "://" in url else str(Path(url).absolute())


def executor() -> dg.ExecutorDefinition:
    """Where a run's steps execute: in the run's own process, a few at once on threads (the
    default, CHAINTAPE_EXECUTOR=threads; how many: CHAINTAPE_STEPS_AT_ONCE) or one at a time
    (in_process), or, with CHAINTAPE_EXECUTOR=celery, on Celery workers through
    the broker CHAINTAPE_CELERY_BROKER (results in CHAINTAPE_CELERY_BACKEND, by default the
    broker), whose results the run looks at every CHAINTAPE_CELERY_POLL_SECONDS."""
    kind = os.environ.get("CHAINTAPE_EXECUTOR", "threads")
    if kind == "threads":
        return threads_executor
    if kind == "in_process":
        return dg.in_process_executor
    if kind != "celery":
        raise ValueError(f"CHAINTAPE_EXECUTOR={kind!r}: expected threads, in_process or celery")
    from dagster_celery import celery_executor, core_execution_loop

    # dagster-celery looks at its tasks' results, and submits the steps a finished one
    # unblocks, once a second (its TICK_SECONDS, no setting): along the graph's chains of
    # sub-second steps that wait, not the work, was most of a run on workers.
    core_execution_loop.TICK_SECONDS = poll_seconds()  # type: ignore[assignment]
    return celery_executor.configured(celery_config())


def poll_seconds() -> float:
    """How often a run on Celery workers looks for finished steps (CHAINTAPE_CELERY_POLL_SECONDS,
    by default 0.05: each look is one result read per running step, from the broker's store)."""
    value = os.environ.get("CHAINTAPE_CELERY_POLL_SECONDS", "0.05")
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 60:
        raise ValueError(f"CHAINTAPE_CELERY_POLL_SECONDS={value!r}: expected seconds in (0, 60]")
    return seconds


def celery_config() -> dict:
    """The Celery executor's and workers' settings, from the environment. A step whose worker
    dies is delivered again to another (acknowledged only once done, and taken back from a lost
    worker after CHAINTAPE_CELERY_REDELIVER_SECONDS)."""
    broker = os.environ.get("CHAINTAPE_CELERY_BROKER", "redis://127.0.0.1:6379/0")
    return {"broker": broker, "backend": os.environ.get("CHAINTAPE_CELERY_BACKEND", broker),
            "config_source": {
                "task_acks_late": True, "task_reject_on_worker_lost": True,
                "worker_prefetch_multiplier": 1,
                "broker_transport_options": {"visibility_timeout": int(os.environ.get(
                    "CHAINTAPE_CELERY_REDELIVER_SECONDS", "300"))}}}
