"""What every command shares: the home, the progress lines, child commands, a materialisation."""

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click

REPO = Path(__file__).resolve().parents[2]


def say(message: str) -> None:
    click.echo(message, err=True)


def said_under(line: str) -> None:
    """A component's progress line, under the line that started it."""
    say(f"  {line}")


def default_home() -> Path:
    """Where every command keeps its files unless $CHAINTAPE_HOME says: the checkout's var/
    (where `make up` keeps them), whichever folder a command is run from; ./var for an
    installed package, which has no checkout."""
    checkout = REPO / "pyproject.toml"
    return (REPO if checkout.exists() else Path.cwd()) / "var"


def environment() -> None:
    """Pin CHAINTAPE_HOME and a DAGSTER_HOME under it holding the repo's dagster.yaml (an
    instance configured otherwise, e.g. on Postgres for a cluster, keeps its own)."""
    home = Path(os.environ.setdefault("CHAINTAPE_HOME", str(default_home())))
    os.environ["CHAINTAPE_HOME"] = str(home.absolute())
    dagster_home = Path(os.environ.setdefault("DAGSTER_HOME", str(home.absolute() / "dagster")))
    dagster_home.mkdir(parents=True, exist_ok=True)
    ours, theirs = REPO / "dagster.yaml", dagster_home / "dagster.yaml"
    if ours.exists() and (not theirs.exists() or theirs.read_text().startswith(
            ours.read_text().splitlines()[0])):
        shutil.copyfile(ours, theirs)


def cli_path() -> str:
    return str(Path(sys.executable).parent / "chaintape")


def launcher(args: list[str], niceness: int = 0) -> Callable[[bool], subprocess.Popen]:
    """How a component running `chaintape ARGS` is started, and started again."""
    return lambda _: child(*args, niceness=niceness)


def child(*args: str, niceness: int = 0) -> subprocess.Popen:
    """A chaintape command as a child process at `niceness`, in a process group of its own
    (`up` stops it and what it started together), sharing this one's output."""
    return subprocess.Popen([cli_path(), *args], process_group=0,
                            preexec_fn=(lambda: os.nice(niceness)) if niceness else None)


def materialize_assets(selection: str | None) -> bool:
    import dagster as dg

    from assets.days import run_tags
    from pipelines.definitions import defs
    from pipelines.resources import resources
    from sources.lake import LakeReader

    stale = resources()["warehouse"].stale_format()
    if stale is not None:
        say(stale)
        return False
    instance = dg.DagsterInstance.get()
    say(f"materialising {selection or 'every asset'} (Dagster home {os.environ['DAGSTER_HOME']})")
    lake = LakeReader()
    days = lake.days_made("swaps")
    tags = run_tags(instance, days) if days else None
    # Through the job's own executor: its steps on threads of this process, one at a time, or
    # on Celery workers, which load the job again from its module.
    success = dg.execute_job(
        dg.build_reconstructable_job("pipelines.definitions", "job_named",
                                     reconstructable_args=("everything",)),
        instance, raise_on_error=False, tags=tags, asset_selection=_selection(defs, selection),
        run_config={"loggers": {"step_lines": {}}}).success
    if not success:
        say("materialisation failed: nothing new was published (see `make ui` for details)")
    return success


def _selection(defs, selection: str | None):
    if selection is None:
        return None
    import dagster as dg

    return list(dg.AssetSelection.from_coercible(selection.split(",")).resolve(
        defs.resolve_asset_graph()))
