"""The components `up` supervises beside the market and the edge: the pipeline's code server and
the Dagster daemon, their logs, and what `up` waits for before it goes on."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import click

from core.priority import as_batch
from pipelines.cli.common import REPO, cli_path, say

DAEMON_LOG_BYTES = 16 << 20


# The code location's name when the daemon served the code itself (`-m`): runs, sensor cursors
# and asset history recorded under it carry on.
CODE_LOCATION = "pipelines.definitions"


def _log(name: str):
    """var/logs/NAME.log opened for appending; the log of the previous start is kept once, so
    the two never pass twice DAEMON_LOG_BYTES."""
    path = Path(os.environ["CHAINTAPE_HOME"]) / "logs" / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > DAEMON_LOG_BYTES:
        path.replace(path.with_suffix(".log.1"))
    return open(path, "ab")


def code_server(port: int) -> subprocess.Popen:
    """The pipeline's code served once, on `port`, for the daemon's sensor and schedules and
    the runs it launches (each run a child process of it), as batch work. A daemon that serves
    the code itself starts a new server every minute, importing everything again, and holds two
    while runs end on the old one. Its output goes to var/logs/code-server.log. The runs a code
    server before it took with it are failed first, so the lake sensor makes their days again."""
    import dagster as dg

    from pipelines.runs import fail_orphaned_runs

    with dg.DagsterInstance.get() as instance:
        for run_id in fail_orphaned_runs(instance):
            say(f"run {run_id[:8]} ended with the code server that ran it: failed, its days "
                 f"are made again by the next refresh")
    bin_dir = Path(sys.executable).parent
    with _log("code-server") as output:
        return subprocess.Popen([str(bin_dir / "dagster"), "api", "grpc", "-m",
                                 "pipelines.definitions", "--host", "127.0.0.1", "--port",
                                 str(port), "--location-name", CODE_LOCATION], cwd=REPO,
                                stdout=output, stderr=subprocess.STDOUT, preexec_fn=as_batch,
                                process_group=0)


def daemon(port: int) -> subprocess.Popen:
    """The Dagster daemon over the same instance and the code server on `port`: it runs the lake
    sensor and the schedules. Its output goes to var/logs/dagster-daemon.log."""
    bin_dir = Path(sys.executable).parent
    workspace = Path(os.environ["DAGSTER_HOME"]) / "workspace.yaml"
    workspace.write_text(f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n"
                         f"      port: {port}\n      location_name: {CODE_LOCATION}\n")
    with _log("dagster-daemon") as output:
        return subprocess.Popen([str(bin_dir / "dagster-daemon"), "run", "-w", str(workspace)],
                                cwd=REPO, stdout=output, stderr=subprocess.STDOUT,
                                preexec_fn=as_batch, process_group=0)


def wait_for_port(port: int, timeout_s: float = 300.0) -> None:
    """Wait until something accepts connections on `port` (the code server has loaded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise click.ClickException(f"the code server did not listen on port {port}")


def wait_for_live(lake, timeout_s: float = 900.0) -> None:
    """Wait until the live market has caught up with the wall clock (it replays the history
    first when it resumes a lake)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        mark = lake.progress()
        if mark is not None and mark.writer == "live" and (
                time.time() - mark.watermark.timestamp() < 30):
            return
        time.sleep(0.5)
    raise click.ClickException("the live market did not catch up with the clock")


def serve_in_place() -> None:
    """Serve from a fresh process image, so that what materialising took (polars' thread pool
    and caches, Dagster's instance) is not held for as long as the edge serves."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cli_path(), [cli_path(), "serve"])
