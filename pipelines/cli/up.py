"""`up`: the whole stack on one machine, simulated or following real chains."""

import os
import shutil
import signal
import subprocess
import sys
import time

import click

from core.ports import free_port
from core.priority import WRITER_NICENESS
from pipelines.cli.chains import chain_followers
from pipelines.cli.common import child, cli_path, launcher, materialize_assets, say
from pipelines.cli.components import code_server, daemon, serve_in_place, wait_for_live, wait_for_port
from pipelines.cli.market import simulate
from pipelines.supervise import Supervisor


@click.command()
@click.option("--fresh", is_flag=True, help="simulate the history again even if the lake has it")
@click.option("--swaps", default=1_000_000, show_default=True, help="swaps in the history")
@click.option("--days", default=7, show_default=True,
              help="days of history (with --swaps, the live market's rate)")
@click.option("--live/--frozen", "is_live", default=True, show_default=True,
              help="keep the market running in real time, refreshing as it lands")
@click.option("--rpc", "rpc_url", default=None,
              help="follow this EVM node instead of simulating (with --venues)")
@click.option("--venues", "venues_file", default=None, type=click.Path(dir_okay=False),
              help="with --rpc: the venues file (docs/ingest.md)")
@click.option("--hermes", "hermes_url", default=None,
              help="with --rpc: the Hermes-compatible upstream of the venues file's `hermes:` "
                   "quotes")
@click.option("--chains", "chains_file", default=None, type=click.Path(dir_okay=False),
              help="follow every chain a chains file names into one lake (docs/ingest.md)")
@click.pass_context
def up(ctx: click.Context, fresh: bool, swaps: int, days: int, is_live: bool,
       rpc_url: str | None, venues_file: str | None, hermes_url: str | None,
       chains_file: str | None) -> None:
    """Simulate (once), go live, materialise and publish, then serve and keep refreshing; or,
    with --rpc and --venues, follow a real chain instead of the simulator."""
    from sources.lake import LakeWriter
    from sources.simulator import replayable

    lake = LakeWriter()
    if (rpc_url is None) != (venues_file is None):
        raise click.UsageError("--rpc and --venues go together")
    if hermes_url is not None and rpc_url is None:
        raise click.UsageError("--hermes goes with --rpc and --venues")
    if chains_file is not None and rpc_url is not None:
        raise click.UsageError("--chains names each chain's node and venues: no --rpc beside it")
    remove_unreadable_warehouse()
    if chains_file is not None:
        _follow_up(lake, chain_followers(chains_file, True, []))
        return
    if rpc_url is not None and venues_file is not None:
        _follow_up(lake, [("", ["ingest", "evm", "--rpc", rpc_url, "--venues", venues_file,
                                "--follow", *(["--hermes", hermes_url] if hermes_url else [])])])
        return
    mark = lake.progress()
    simulating = fresh or mark is None
    if mark is not None and not simulating and not replayable(mark.meta):
        say(f"the lake at {lake.root} holds a history an earlier simulator made, which the "
             "live market cannot go on from: simulating it again")
        simulating = True
    if mark is not None and not simulating:
        say(f"lake already present at {lake.root}, complete up to "
             f"{mark.watermark:%Y-%m-%d %H:%M:%S}Z (use --fresh to simulate again)")
    if not is_live:
        if simulating:
            ctx.invoke(simulate, swaps=swaps, days=days)
        if not materialize_assets(None):
            sys.exit(1)
        serve_in_place()
    supervisor = Supervisor(say)
    # Stopped by a signal as by Ctrl-C: what it started is stopped with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        # The history, then the live market in the same process (no replay of what it just
        # made); or the live market going on from the lake's last mark, as it does when it is
        # started again.
        history = ["simulate", "--swaps", str(swaps), "--days", str(days), "--live"]
        supervisor.start("live market", lambda again: child(
            *(history if simulating and not again else ["live"]), niceness=WRITER_NICENESS))
        wait_for_live(lake)
        _serve_and_refresh(supervisor, "live: the market runs, the lake sensor refreshes and "
                                       "publishes as it lands (`chaintape ui` shows the runs); "
                                       "Ctrl-C stops everything")
    finally:
        supervisor.stop()


def remove_unreadable_warehouse() -> None:
    """A warehouse written in another layout than this code reads is removed here, to be made
    again from the lake by the first materialisation; one on S3 is left to its owner."""
    from pipelines.resources import resources

    warehouse = resources()["warehouse"]
    stale = warehouse.stale_format()
    if stale is None:
        return
    if warehouse.remote:
        raise click.ClickException(stale)
    say(f"{stale}: removing it, to be made again")
    shutil.rmtree(warehouse.root)


def _follow_up(lake, followers: list[tuple[str, list[str]]]) -> None:
    """Follow each chain into the lake (`followers`: each chain's slug and `ingest evm`
    arguments), materialise the first batch, then serve and refresh as batches land."""
    supervisor = Supervisor(say)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # The edge's oracle serves the chains' own feeds, as the live tails carry them.
    os.environ.setdefault("CHAINTAPE_ORACLE_UPSTREAM", "lake")
    try:
        started = [supervisor.start(f"chain follower {slug}".strip(),
                                    launcher(args, WRITER_NICENESS))
                   for slug, args in followers]
        deadline = time.monotonic() + 900
        while lake.progress() is None:
            if all(f.process.poll() is not None for f in started):
                raise click.ClickException("the chain followers stopped before a first batch")
            if time.monotonic() > deadline:
                raise click.ClickException("the chain follower wrote no batch in 15 minutes")
            time.sleep(0.5)
        _serve_and_refresh(supervisor, "following the chain: the lake sensor refreshes and "
                                       "publishes as its batches land; Ctrl-C stops everything")
    finally:
        supervisor.stop()


def _serve_and_refresh(supervisor: Supervisor, message: str) -> None:
    """Make the first snapshot here, before serving; then the daemon's lake sensor makes the
    next ones as the lake's writer lands batches, while the edge serves; every component is
    restarted when it stops, until Ctrl-C."""
    if subprocess.run([cli_path(), "materialize"], check=False).returncode:
        sys.exit(1)
    port = free_port()
    supervisor.start("code server", lambda _: code_server(port))
    wait_for_port(port)
    supervisor.start("Dagster daemon", lambda _: daemon(port))
    supervisor.start("live tail", lambda _: child("tail", niceness=WRITER_NICENESS))
    supervisor.start("edge", lambda _: child("serve"))
    say(message)
    supervisor.watch()
