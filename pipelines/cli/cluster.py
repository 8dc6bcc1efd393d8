"""`worker`: a Celery worker for the pipeline's steps."""

import json
import os
import sys
import time
from pathlib import Path

import click

from pipelines.cli.common import REPO


@click.command()
@click.option("--name", default=None, help="the worker's name (default: chaintape-<pid>@<host>)")
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(1, 64),
              help="steps run at once")
def worker(name: str | None, concurrency: int) -> None:
    """Run a Celery worker for the pipeline's steps (with CHAINTAPE_EXECUTOR=celery), on the
    broker CHAINTAPE_CELERY_BROKER; start any number, on any machines sharing the instance and
    the storage (docs/deploy.md)."""
    from pipelines.resources import celery_config

    instance_made()
    config = Path(os.environ["CHAINTAPE_HOME"]) / "celery.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    # Replaced whole: workers starting together never read one half written.
    written = config.with_name(f".celery.yaml.{os.getpid()}")
    written.write_text(json.dumps({"execution": {"config": celery_config()}}))
    os.replace(written, config)
    bin_dir = Path(sys.executable).parent
    # The worker starts `celery` by name: the environment's own.
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    # The definitions are imported once, before the pool forks: a step would otherwise wait
    # for its worker's first import of them (~2 s) at the start of a run. `pipelines.workers`
    # sets up each pool process.
    args = [str(bin_dir / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
            "-i", "pipelines.definitions", "-i", "pipelines.workers", "-y", str(config), "-l", "INFO"]
    if name:
        args += ["-n", name]
    os.chdir(REPO)
    os.execv(args[0], [*args, "--", "--concurrency", str(concurrency)])


def instance_made(attempts: int = 6) -> None:
    """The Dagster instance's storage made (once, by whichever worker is first): workers
    started together on a new database race to make its tables, and the one that loses finds
    a table made under it; it tries again, and then finds them all made."""
    import dagster as dg
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(attempts):
        try:
            dg.DagsterInstance.get().dispose()
            return
        except (IntegrityError, ProgrammingError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * 2**attempt)
