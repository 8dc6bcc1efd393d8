"""The simulated market and the pipeline's own commands: simulate, live, tail, materialize and
publish."""

import signal
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from pipelines.cli.common import materialize_assets, said_under, say

if TYPE_CHECKING:
    from sources.simulator.live_market import LiveMarket


@click.command()
@click.option("--chains", default=6, show_default=True, help="chains to simulate (4..8)")
@click.option("--days", default=7, show_default=True, help="days of history")
@click.option("--swaps", default=1_000_000, show_default=True, help="swaps in the history")
@click.option("--seed", default=7, show_default=True, help="random seed (same seed, same lake)")
@click.option("--end", default=None, show_default="now",
              help="end of the history (ISO 8601 with offset); the same seed and end give the "
                   "same lake")
@click.option("--live", is_flag=True, help="then keep producing blocks in real time")
@click.option("--every", default=2.0, show_default=True, help="with --live: seconds between "
                                                              "commits")
def simulate(chains: int, days: int, swaps: int, seed: int, end: str | None, live: bool,
             every: float) -> None:
    """Write a deterministic simulated market to the lake, up to now (or --end)."""
    from sources.lake import LakeWriter
    from sources.simulator import ChainRun, SimulationConfig
    from sources.simulator import simulate as run

    try:
        ends = (datetime.fromisoformat(end) if end
                else datetime.now(UTC).replace(microsecond=0))
        config = SimulationConfig(chains, days, swaps, seed, ends)
        config.validate()
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    lake = LakeWriter()
    say(f"simulating {chains} chains x {days} days up to {ends:%Y-%m-%d %H:%M:%S}Z, "
         f"{swaps:,} swaps, seed {seed} -> {lake.root}")
    started = time.perf_counter()
    runs: list[ChainRun] = []
    counts = run(config, lake, progress=said_under, runs=runs)
    say(f"lake written in {time.perf_counter() - started:.1f}s: "
         + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if live:
        from sources.simulator.live_market import LiveMarket

        _live(None, every, LiveMarket(config, runs, lake))


@click.command()
@click.option("--until", default=None, help="stop once the market reaches this instant (ISO "
                                            "8601 with offset); by default it runs on")
@click.option("--every", default=2.0, show_default=True, help="seconds between commits")
def live(until: str | None, every: float) -> None:
    """Go on producing the simulated market in real time, from where the lake stands."""
    try:
        stop_at = datetime.fromisoformat(until) if until else None
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    _live(stop_at, every)


def _live(until: datetime | None, every: float, market: "LiveMarket | None" = None) -> None:
    from core.renewal import Renewal
    from sources.lake import LakeError, LakeWriter
    from sources.simulator import live_market

    lake = LakeWriter(keep_open=True)
    say(f"live market -> {lake.root} (a batch every {every:g}s; Ctrl-C stops it)")
    # Renewed as `chaintape live`, which goes on from the lake's mark (a `simulate --live`
    # would simulate the history again).
    going_on = [sys.argv[0], "live", "--every", str(every),
                *(["--until", until.isoformat()] if until else [])]
    try:
        live_market.run(lake, every, until, progress=said_under, market=market,
                        renewal=Renewal("live market", said_under, going_on))
    except LakeError as err:
        raise click.ClickException(str(err)) from None
    except KeyboardInterrupt:
        say("live market stopped; `chaintape live` goes on from here")


@click.command(name="tail")
@click.option("--poll", default=0.2, show_default=True,
              help="seconds between looks at the lake's mark and LATEST")
def tail(poll: float) -> None:
    """Publish the live tail: the trades past the latest snapshot and every pair's state, after
    each lake commit, for the edges' dynamic lookups."""
    from core.renewal import Renewal
    from core.store import open_store
    from pipelines.resources import resources
    from sources.lake import LakeWriter
    from tail.writer import follow

    found = resources()
    store = open_store(found["store"].url)
    # Stopped by a signal as by Ctrl-C, whatever its parent left the signal set to.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    say(f"live tail -> {found['store'].url} (after every lake commit; Ctrl-C stops it)")
    try:
        follow(LakeWriter(keep_open=True), found["warehouse"], store, poll,
               progress=said_under,
               renewal=Renewal("live tail", said_under))
    except KeyboardInterrupt:
        say("live tail stopped")


@click.command()
@click.option("--select", default=None, help="comma-separated asset keys, e.g. chains/config")
def materialize(select: str | None) -> None:
    """Materialise assets and run their blocking checks (publishes when the snapshot runs)."""
    if not materialize_assets(select):
        sys.exit(1)


@click.command()
def publish() -> None:
    """Re-check the materialised products and publish them as a new snapshot."""
    if not materialize_assets("publish/snapshot"):
        sys.exit(1)
