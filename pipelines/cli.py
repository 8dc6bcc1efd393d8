"""The chaintape command line: simulate, materialize, publish, serve, up, ui."""

import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from core.ports import free_port
from core.priority import WRITER_NICENESS, as_batch
from edge.plans import PLANS
from pipelines.supervise import Supervisor

if TYPE_CHECKING:
    from sources.evm.config import IngestConfig
    from sources.evm.ingest import Follower
    from sources.evm.rpc import Rpc
    from sources.lake import Lake
    from sources.simulator.live_market import LiveMarket

REPO = Path(__file__).resolve().parent.parent
DAEMON_LOG_BYTES = 16 << 20
# The code location's name when the daemon served the code itself (`-m`): runs, sensor cursors
# and asset history recorded under it carry on.
CODE_LOCATION = "pipelines.definitions"
# An edge worker replaced: the fresh one starts, the old one serves on this long beside it. The
# fresh one listens only once it has loaded the snapshot (~2 s at 1M on a quiet machine; 10 s
# once fell short on one busy on both cores), and until one listens a connection is refused.
RESPAWN_S, RSS_SAMPLE_S = 30.0, 5


def _say(message: str) -> None:
    click.echo(message, err=True)


def _said_under(line: str) -> None:
    """A component's progress line, under the line that started it."""
    _say(f"  {line}")


def default_home() -> Path:
    """Where every command keeps its files unless $CHAINTAPE_HOME says: the checkout's var/
    (where `make up` keeps them), whichever folder a command is run from; ./var for an
    installed package, which has no checkout."""
    checkout = REPO / "pyproject.toml"
    return (REPO if checkout.exists() else Path.cwd()) / "var"


def _environment() -> None:
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


@click.group()
def main() -> None:
    """chaintape: on-chain market data, from raw lake to served snapshot."""
    _environment()


@main.command()
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
    from sources.lake import Lake
    from sources.simulator import ChainRun, SimulationConfig
    from sources.simulator import simulate as run

    try:
        ends = (datetime.fromisoformat(end) if end
                else datetime.now(UTC).replace(microsecond=0))
        config = SimulationConfig(chains, days, swaps, seed, ends)
        config.validate()
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    lake = Lake()
    _say(f"simulating {chains} chains x {days} days up to {ends:%Y-%m-%d %H:%M:%S}Z, "
         f"{swaps:,} swaps, seed {seed} -> {lake.root}")
    started = time.perf_counter()
    runs: list[ChainRun] = []
    counts = run(config, lake, progress=_said_under, runs=runs)
    _say(f"lake written in {time.perf_counter() - started:.1f}s: "
         + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if live:
        from sources.simulator.live_market import LiveMarket

        _live(None, every, LiveMarket(config, runs, lake))


@main.command()
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
    from sources.lake import Lake, LakeError
    from sources.simulator import live_market

    lake = Lake(keep_open=True)
    _say(f"live market -> {lake.root} (a batch every {every:g}s; Ctrl-C stops it)")
    # Renewed as `chaintape live`, which goes on from the lake's mark (a `simulate --live`
    # would simulate the history again).
    going_on = [sys.argv[0], "live", "--every", str(every),
                *(["--until", until.isoformat()] if until else [])]
    try:
        live_market.run(lake, every, until, progress=_said_under, market=market,
                        renewal=Renewal("live market", _said_under, going_on))
    except LakeError as err:
        raise click.ClickException(str(err)) from None
    except KeyboardInterrupt:
        _say("live market stopped; `chaintape live` goes on from here")


@main.command(name="tail")
@click.option("--poll", default=0.2, show_default=True,
              help="seconds between looks at the lake's mark and LATEST")
def tail(poll: float) -> None:
    """Publish the live tail: the trades past the latest snapshot and every pair's state, after
    each lake commit, for the edges' dynamic lookups."""
    from core.renewal import Renewal
    from core.store import open_store
    from pipelines.resources import resources
    from sources.lake import Lake
    from tail.writer import follow

    found = resources()
    store = open_store(found["store"].url)
    # Stopped by a signal as by Ctrl-C, whatever its parent left the signal set to.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    _say(f"live tail -> {found['store'].url} (after every lake commit; Ctrl-C stops it)")
    try:
        follow(Lake(keep_open=True), found["warehouse"], store, poll,
               progress=_said_under,
               renewal=Renewal("live tail", _said_under))
    except KeyboardInterrupt:
        _say("live tail stopped")


@main.group()
def ingest() -> None:
    """Follow a real chain into the lake."""


@ingest.command("evm")
@click.option("--rpc", "rpc_url", default=None, help="the node's JSON-RPC URL (http or https)")
@click.option("--venues", "venues_file", default=None, type=click.Path(dir_okay=False),
              help="the venues file (YAML; docs/ingest.md)")
@click.option("--chains", "chains_file", default=None, type=click.Path(dir_okay=False),
              help="instead of --rpc and --venues: a chains file, one follower per chain into "
                   "the one lake (docs/ingest.md)")
@click.option("--from-block", type=click.IntRange(min=0), default=None,
              show_default="where the lake stands, else 0", help="first block to read")
@click.option("--to-block", type=click.IntRange(min=0), default=None,
              show_default="the head", help="last block to read")
@click.option("--confirmations", type=click.IntRange(min=0), default=12, show_default=True,
              help="blocks under the head still open to a reorg")
@click.option("--follow", is_flag=True, help="keep following the head")
@click.option("--batch-blocks", type=click.IntRange(min=1, max=100_000), default=1_000,
              show_default=True, help="blocks read and committed at a time")
@click.option("--poll", type=click.FloatRange(min=0.05), default=2.0, show_default=True,
              help="with --follow: seconds between looks at the head")
@click.option("--hermes", "hermes_url", default=None,
              help="the Hermes-compatible upstream of the venues file's `hermes:` quotes")
@click.option("--rpc-concurrency", type=click.IntRange(1, 64), default=4, show_default=True,
              help="JSON-RPC requests in flight at once")
@click.option("--max-rps", type=click.FloatRange(min=0.1), default=None,
              show_default="no limit", help="JSON-RPC requests a second at most")
def ingest_evm(rpc_url: str | None, venues_file: str | None, chains_file: str | None,
               from_block: int | None, to_block: int | None, confirmations: int, follow: bool,
               batch_blocks: int, poll: float, hermes_url: str | None, rpc_concurrency: int,
               max_rps: float | None) -> None:
    """Read an EVM chain's pools over JSON-RPC into the lake, reorg-safe and resumable; or,
    with --chains, several chains into one lake, a follower each."""
    if chains_file is not None:
        if rpc_url or venues_file or hermes_url or from_block is not None \
                or to_block is not None:
            raise click.UsageError("--chains names each chain's node, venues and Hermes "
                                   "upstream: no --rpc, --venues, --hermes, --from-block or "
                                   "--to-block beside it")
        _follow_chains(chains_file, follow, [
            "--confirmations", str(confirmations), "--batch-blocks", str(batch_blocks),
            "--poll", str(poll)], rpc_concurrency, max_rps)
        return
    if rpc_url is None or venues_file is None:
        raise click.UsageError("name the chain (--rpc and --venues) or the chains (--chains)")
    from core.renewal import Renewal
    from sources.evm.config import ConfigError, load
    from sources.evm.rpc import Rpc, RpcError
    from sources.hermes import Hermes, HermesError
    from sources.lake import Lake, LakeError

    if not rpc_url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{rpc_url!r} is not an http(s) URL", param_hint="--rpc")
    if from_block is not None and to_block is not None and to_block < from_block:
        raise click.BadParameter("is before --from-block", param_hint="--to-block")
    if hermes_url is not None and not hermes_url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{hermes_url!r} is not an http(s) URL", param_hint="--hermes")
    try:
        config = load(venues_file)
    except ConfigError as err:
        raise click.ClickException(f"{venues_file}: {err}") from None
    if config.hermes_ids and hermes_url is None:
        raise click.UsageError(f"{venues_file} prices a quote by a Hermes feed: name its "
                               "upstream with --hermes URL")
    hermes = Hermes(hermes_url, config.hermes_ids) if hermes_url and config.hermes_ids else None
    lake = Lake(keep_open=True)
    rpc = Rpc(rpc_url, concurrency=rpc_concurrency, max_rps=max_rps)
    # Stopped by a signal as by Ctrl-C, whatever its parent left the signal set to.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        follower = _opened(rpc, config, lake, follow, {
            "confirmations": confirmations, "batch_blocks": batch_blocks,
            "from_block": from_block, "progress": _said_under, "hermes": hermes})
        if hermes is not None and follow:
            hermes.start()
        _say(f"following chain {follower.chain_id} ({config.chain.slug}) from block "
             f"{follower.cursor.next_block:,} -> {lake.root}"
             + (" (Ctrl-C stops it; it goes on from here next time)" if follow else ""))
        follower.run(to_block, follow, poll, renewal=Renewal(
            f"chain follower {config.chain.slug}", _said_under,
            _going_on(sys.argv)) if follow else None)
    except ConfigError as err:
        raise click.ClickException(f"{venues_file}: {err}") from None
    except (RpcError, LakeError, HermesError) as err:
        raise click.ClickException(str(err)) from None
    except KeyboardInterrupt:
        _say("stopped; the next `chaintape ingest evm` goes on from the last marked block")
    finally:
        rpc.close()
        if hermes is not None:
            hermes.stop()


def _opened(rpc: "Rpc", config: "IngestConfig", lake: "Lake", follow: bool,
            options: dict[str, Any]) -> "Follower":
    """The chain's follower, once its node answers: following, a node that does not answer
    is said on /status (the lake's mark, under the chain the lake knows by the venues file's
    slug) and asked again."""
    from sources.evm.cursor import chain_of_slug, node_state
    from sources.evm.cursor import unreachable as unreachable_node
    from sources.evm.ingest import UNREACHABLE_WAIT_S, Follower
    from sources.evm.rpc import RpcUnreachable

    since = datetime.now(UTC)
    while True:
        try:
            return Follower.open(rpc, config, lake, **options)
        except RpcUnreachable as err:
            if not follow:
                raise
            chain_id = chain_of_slug(lake, config.chain.slug)
            if chain_id is not None:
                node_state(lake, chain_id, unreachable_node(err, since))
            _say(f"{config.chain.slug}: the node does not answer ({err}); asking again in "
                 f"{UNREACHABLE_WAIT_S:g}s")
            time.sleep(UNREACHABLE_WAIT_S)


def _going_on(argv: list[str]) -> list[str]:
    """A follower's command that goes on from the lake's mark: without `--from-block`."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--from-block":
            skip = True
        elif not arg.startswith("--from-block="):
            out.append(arg)
    return out


def _chain_followers(chains_file: str, follow: bool, options: list[str],
                     rpc_concurrency: int | None = None,
                     max_rps: float | None = None) -> list[tuple[str, list[str]]]:
    """Each chain of a chains file and the `ingest evm` arguments of its follower."""
    from sources.evm.config import ConfigError, load_chains

    try:
        found = load_chains(chains_file)
    except ConfigError as err:
        raise click.ClickException(f"{chains_file}: {err}") from None
    out = []
    for chain in found.chains:
        concurrency = chain.rpc_concurrency or rpc_concurrency
        rate = chain.max_rps or max_rps
        out.append((chain.config.chain.slug, [
            "ingest", "evm", "--rpc", chain.rpc, "--venues", str(chain.venues), *options,
            *(["--follow"] if follow else []),
            *(["--hermes", found.hermes] if found.hermes and chain.config.hermes_ids else []),
            *(["--rpc-concurrency", str(concurrency)] if concurrency else []),
            *(["--max-rps", str(rate)] if rate else [])]))
    return out


def _follow_chains(chains_file: str, follow: bool, options: list[str], rpc_concurrency: int,
                   max_rps: float | None) -> None:
    """A follower per chain, each its own process: with --follow kept running (one that stops
    is started again, the others go on) until Ctrl-C; else until each reaches its head."""
    followers = _chain_followers(chains_file, follow, options, rpc_concurrency, max_rps)
    supervisor = Supervisor(_say)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        for slug, args in followers:
            supervisor.start(f"chain follower {slug}", _launcher(args))
        if follow:
            supervisor.watch()
            return
        failed = [name for name, part in supervisor.components.items()
                  if part.process.wait() != 0]
        if failed:
            raise click.ClickException(f"{', '.join(failed)} stopped with an error (above)")
    except KeyboardInterrupt:
        _say("stopped; each chain goes on from its last marked block next time")
    finally:
        supervisor.stop()


@main.command()
@click.option("--port", default=8545, show_default=True, type=click.IntRange(1, 65535))
@click.option("--venues", "venues_file", default="var/devnet.venues.yaml", show_default=True,
              type=click.Path(dir_okay=False), help="where to write the market's venues file")
@click.option("--every", default=2.0, show_default=True, type=click.FloatRange(min=0.1),
              help="seconds between trades")
@click.option("--chain-id", default=31337, show_default=True, type=click.IntRange(1, 2**53),
              help="the node's chain id (two devnets in one lake need two)")
@click.option("--slug", default="devnet", show_default=True,
              help="the chain's slug in the venues file")
@click.option("--new-pool-every", type=click.IntRange(min=0), default=0, show_default=True,
              help="trades between two new tokens' pools (0: none), as pools appear on a "
                   "real chain")
def devnet(port: int, venues_file: str, every: float, chain_id: int, slug: str,
           new_pool_every: int) -> None:
    """Start a local EVM node with a small V2 market on it, WETH priced by a Chainlink
    aggregator, and keep trading (the aggregator answering now and then, a new token's pool
    launched now and then with --new-pool-every): a chain to point `chaintape ingest evm` or
    `chaintape up --rpc` at."""
    from sources.evm.devnet import Devnet, DevnetError, start_node, v2_market

    try:
        node = start_node(chain_id=chain_id, port=port)
    except DevnetError as err:
        raise click.ClickException(str(err)) from None
    # Stopped by a signal as by Ctrl-C: the node stops with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    net = Devnet(node.url)
    try:
        market = v2_market(net)
        pairs = [market.pool(name, symbol, 100 * 10**18, 10**8 * 10**18)
                 for symbol, name in (("PEPE", "Pepe"), ("WOJAK", "Wojak"))]
        for trader in (1, 2, 3):
            market.transfer(market.quote, trader, 1_000 * 10**18)
            market.approve(trader, market.quote, *(base for _, base in pairs))
        Path(venues_file).parent.mkdir(parents=True, exist_ok=True)
        Path(venues_file).write_text(market.venues_file(slug))
        _say(f"devnet on {node.url} (chain {chain_id}), venues file {venues_file}; try:\n"
             f"  chaintape up --rpc {node.url} --venues {venues_file}\n"
             "trading every "
             f"{every:g}s (Ctrl-C stops it)")
        step = 0
        while True:
            pair, base = pairs[step % len(pairs)]
            trader = 1 + step % 3
            if step % 4 == 3:
                held = net.view(base, "balanceOf(address)", ["uint256"],
                                net.accounts[trader])[0]
                if held:
                    market.swap(pair, base, held // 2, trader)
            else:
                market.swap(pair, market.quote, 10**17 * (1 + step % 5), trader)
            if step % 15 == 14:
                # The ETH/USD aggregator answers again, a step of the walk 2,900..3,100 USD.
                market.answer((3_000 + 20 * ((step // 15) % 11 - 5)) * 10**8)
            step += 1
            if new_pool_every and step % new_pool_every == 0:
                launched = step // new_pool_every
                pairs.append(market.pool(f"Launch {launched}", f"NEW{launched}",
                                         100 * 10**18, 10**8 * 10**18))
                for trader in (1, 2, 3):
                    market.approve(trader, pairs[-1][1])
                _say(f"launched NEW{launched}/WETH at {pairs[-1][0]}")
            time.sleep(every)
    except KeyboardInterrupt:
        _say("devnet stopped")
    finally:
        net.close()
        node.stop()


@main.command()
@click.option("--name", default=None, help="the worker's name (default: chaintape-<pid>@<host>)")
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(1, 64),
              help="steps run at once")
def worker(name: str | None, concurrency: int) -> None:
    """Run a Celery worker for the pipeline's steps (with CHAINTAPE_EXECUTOR=celery), on the
    broker CHAINTAPE_CELERY_BROKER; start any number, on any machines sharing the instance and
    the storage (docs/deploy.md)."""
    from pipelines.resources import celery_config

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
    # for its worker's first import of them (~2 s) at the start of a run.
    args = [str(bin_dir / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
            "-i", "pipelines.definitions", "-y", str(config), "-l", "INFO"]
    if name:
        args += ["-n", name]
    os.chdir(REPO)
    os.execv(args[0], [*args, "--", "--concurrency", str(concurrency)])


def _materialize(selection: str | None) -> bool:
    import dagster as dg

    from assets.days import run_tags
    from pipelines.definitions import defs
    from sources.lake import Lake

    instance = dg.DagsterInstance.get()
    _say(f"materialising {selection or 'every asset'} (Dagster home {os.environ['DAGSTER_HOME']})")
    lake = Lake()
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
        _say("materialisation failed: nothing new was published (see `make ui` for details)")
    return success


def _selection(defs, selection: str | None):
    if selection is None:
        return None
    import dagster as dg

    return list(dg.AssetSelection.from_coercible(selection.split(",")).resolve(
        defs.resolve_asset_graph()))


@main.command()
@click.option("--select", default=None, help="comma-separated asset keys, e.g. chains/config")
def materialize(select: str | None) -> None:
    """Materialise assets and run their blocking checks (publishes when the snapshot runs)."""
    if not _materialize(select):
        sys.exit(1)


@main.command()
def publish() -> None:
    """Re-check the materialised products and publish them as a new snapshot."""
    if not _materialize("publish/snapshot"):
        sys.exit(1)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=lambda: int(os.environ.get("PORT", "8000")), type=int,
              show_default="$PORT or 8000")
@click.option("--interface", type=click.Choice(["rsgi", "asgi"]), default="rsgi",
              show_default=True, help="granian's native interface, or plain ASGI")
@click.option("--worker-hours", type=click.FloatRange(min=1 / 60), show_default=True,
              default=lambda: float(os.environ.get("CHAINTAPE_EDGE_WORKER_HOURS", "6")),
              help="hours a worker serves before a fresh one takes over")
@click.option("--worker-max-rss-mb", type=click.IntRange(min=1), default=None,
              help="a worker whose resident memory passes this is replaced at once")
def serve(host: str, port: int, interface: str, worker_hours: float,
          worker_max_rss_mb: int | None) -> None:
    """Serve the latest snapshot over HTTP."""
    from granian.constants import HTTPModes, Interfaces, Loops, RuntimeModes
    from granian.log import LogLevels
    from granian.server import Server

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror}") from None
    # Workers are started as fresh processes, not forked: a fork copies this process as it
    # stands, the announcing thread's held locks included, and a worker stopped before it had
    # set its own signal handling kept the inherited ones and would not stop.
    multiprocessing.set_start_method("spawn", force=True)
    _oracle_of_the_lake()
    _announce_once_listening(host, port)
    # Streams never finish by themselves: stopping waits this long for them, then cuts them
    # (their clients resume elsewhere with Last-Event-ID). A worker's memory rises slowly over
    # days (~18 MB an hour at 1M), so it is replaced after `worker_hours`: the fresh one starts,
    # and the old one stops RESPAWN_S later, once the new one serves.
    Server("edge.app:create_app", address=host, port=port, interface=Interfaces(interface),
           factory=True, websockets=True, loop=Loops.uvloop, http=HTTPModes.http1,
           runtime_mode=RuntimeModes.st, log_access=False, workers_kill_timeout=3,
           workers_lifetime=max(60, round(worker_hours * 3600)),
           workers_max_rss=worker_max_rss_mb, rss_sample_interval=RSS_SAMPLE_S,
           respawn_interval=RESPAWN_S, log_level=LogLevels.warning,
           working_dir=Path.cwd()).serve()


def _oracle_of_the_lake() -> None:
    """Over a lake that chain followers write, the edge's oracle serves the lake's own feeds
    (`CHAINTAPE_ORACLE_UPSTREAM=lake`) unless an upstream is set: a real lake's prices are
    never the simulator's."""
    from sources.evm.cursor import WRITER
    from sources.lake import Lake

    if os.environ.get("CHAINTAPE_ORACLE_UPSTREAM"):
        return
    mark = Lake().progress()
    if mark is not None and mark.writer == WRITER:
        os.environ["CHAINTAPE_ORACLE_UPSTREAM"] = "lake"


def _announce_once_listening(host: str, port: int) -> None:
    """Say where the edge listens, with a few calls to try, once it accepts connections: the
    server binds only after it has started, and a port taken makes it fail instead."""
    reachable = "127.0.0.1" if host in ("0.0.0.0", "") else host

    def announce() -> None:
        while True:
            try:
                socket.create_connection((reachable, port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        base = f"http://{host}:{port}/api/v1"
        _say(f"edge listening on http://{host}:{port} - try:")
        for path in ("/config", "/chains", "/chains?limit=2"):
            _say(f"  curl {base}{path}")

    threading.Thread(target=announce, name="announce", daemon=True).start()


@main.command()
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
    from sources.lake import Lake
    from sources.simulator import replayable

    lake = Lake()
    if (rpc_url is None) != (venues_file is None):
        raise click.UsageError("--rpc and --venues go together")
    if hermes_url is not None and rpc_url is None:
        raise click.UsageError("--hermes goes with --rpc and --venues")
    if chains_file is not None and rpc_url is not None:
        raise click.UsageError("--chains names each chain's node and venues: no --rpc beside it")
    if chains_file is not None:
        _follow_up(lake, _chain_followers(chains_file, True, []))
        return
    if rpc_url is not None and venues_file is not None:
        _follow_up(lake, [("", ["ingest", "evm", "--rpc", rpc_url, "--venues", venues_file,
                                "--follow", *(["--hermes", hermes_url] if hermes_url else [])])])
        return
    mark = lake.progress()
    simulating = fresh or mark is None
    if mark is not None and not simulating and not replayable(mark.meta):
        _say(f"the lake at {lake.root} holds a history an earlier simulator made, which the "
             "live market cannot go on from: simulating it again")
        simulating = True
    if mark is not None and not simulating:
        _say(f"lake already present at {lake.root}, complete up to "
             f"{mark.watermark:%Y-%m-%d %H:%M:%S}Z (use --fresh to simulate again)")
    if not is_live:
        if simulating:
            ctx.invoke(simulate, swaps=swaps, days=days)
        if not _materialize(None):
            sys.exit(1)
        _serve_in_place()
    supervisor = Supervisor(_say)
    # Stopped by a signal as by Ctrl-C: what it started is stopped with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        # The history, then the live market in the same process (no replay of what it just
        # made); or the live market going on from the lake's last mark, as it does when it is
        # started again.
        history = ["simulate", "--swaps", str(swaps), "--days", str(days), "--live"]
        supervisor.start("live market", lambda again: _child(
            *(history if simulating and not again else ["live"]), niceness=WRITER_NICENESS))
        _wait_for_live(lake)
        _serve_and_refresh(supervisor, "live: the market runs, the lake sensor refreshes and "
                                       "publishes as it lands (`chaintape ui` shows the runs); "
                                       "Ctrl-C stops everything")
    finally:
        supervisor.stop()


def _follow_up(lake, followers: list[tuple[str, list[str]]]) -> None:
    """Follow each chain into the lake (`followers`: each chain's slug and `ingest evm`
    arguments), materialise the first batch, then serve and refresh as batches land."""
    supervisor = Supervisor(_say)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # The edge's oracle serves the chains' own feeds, as the live tails carry them.
    os.environ.setdefault("CHAINTAPE_ORACLE_UPSTREAM", "lake")
    try:
        started = [supervisor.start(f"chain follower {slug}".strip(),
                                    _launcher(args, WRITER_NICENESS))
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
    if subprocess.run([_cli(), "materialize"], check=False).returncode:
        sys.exit(1)
    port = free_port()
    supervisor.start("code server", lambda _: _code_server(port))
    _wait_for_port(port)
    supervisor.start("Dagster daemon", lambda _: _daemon(port))
    supervisor.start("live tail", lambda _: _child("tail", niceness=WRITER_NICENESS))
    supervisor.start("edge", lambda _: _child("serve"))
    _say(message)
    supervisor.watch()


def _cli() -> str:
    return str(Path(sys.executable).parent / "chaintape")


def _launcher(args: list[str], niceness: int = 0) -> Callable[[bool], subprocess.Popen]:
    """How a component running `chaintape ARGS` is started, and started again."""
    return lambda _: _child(*args, niceness=niceness)


def _child(*args: str, niceness: int = 0) -> subprocess.Popen:
    """A chaintape command as a child process at `niceness`, in a process group of its own
    (`up` stops it and what it started together), sharing this one's output."""
    return subprocess.Popen([_cli(), *args], process_group=0,
                            preexec_fn=(lambda: os.nice(niceness)) if niceness else None)


def _log(name: str):
    """var/logs/NAME.log opened for appending; the log of the previous start is kept once, so
    the two never pass twice DAEMON_LOG_BYTES."""
    path = Path(os.environ["CHAINTAPE_HOME"]) / "logs" / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > DAEMON_LOG_BYTES:
        path.replace(path.with_suffix(".log.1"))
    return open(path, "ab")


def _code_server(port: int) -> subprocess.Popen:
    """The pipeline's code served once, on `port`, for the daemon's sensor and schedules and
    the runs it launches (each run a child process of it), as batch work. A daemon that serves
    the code itself starts a new server every minute, importing everything again, and holds two
    while runs end on the old one. Its output goes to var/logs/code-server.log. The runs a code
    server before it took with it are failed first, so the lake sensor makes their days again."""
    import dagster as dg

    from pipelines.runs import fail_orphaned_runs

    with dg.DagsterInstance.get() as instance:
        for run_id in fail_orphaned_runs(instance):
            _say(f"run {run_id[:8]} ended with the code server that ran it: failed, its days "
                 f"are made again by the next refresh")
    bin_dir = Path(sys.executable).parent
    with _log("code-server") as output:
        return subprocess.Popen([str(bin_dir / "dagster"), "api", "grpc", "-m",
                                 "pipelines.definitions", "--host", "127.0.0.1", "--port",
                                 str(port), "--location-name", CODE_LOCATION], cwd=REPO,
                                stdout=output, stderr=subprocess.STDOUT, preexec_fn=as_batch,
                                process_group=0)


def _daemon(port: int) -> subprocess.Popen:
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


def _wait_for_port(port: int, timeout_s: float = 300.0) -> None:
    """Wait until something accepts connections on `port` (the code server has loaded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise click.ClickException(f"the code server did not listen on port {port}")


def _wait_for_live(lake, timeout_s: float = 900.0) -> None:
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


def _serve_in_place() -> None:
    """Serve from a fresh process image, so that what materialising took (polars' thread pool
    and caches, Dagster's instance) is not held for as long as the edge serves."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(_cli(), [_cli(), "serve"])


@main.command()
@click.option("--port", default=3000, show_default=True)
def ui(port: int) -> None:
    """Open the Dagster UI over the same lake and instance."""
    _say(f"Dagster UI on http://127.0.0.1:{port}")
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "dagster"), "dev", "-m", "pipelines.definitions",
                    "-p", str(port)], check=False, cwd=REPO)


@main.command()
@click.option("--edge", "edge_url", default=lambda: os.environ.get("CHAINTAPE_EDGE_URL"),
              show_default="$CHAINTAPE_EDGE_URL, else the local snapshot",
              help="base URL of the edge to answer from")
@click.option("--key", default=lambda: os.environ.get("CHAINTAPE_API_KEY"),
              show_default="$CHAINTAPE_API_KEY", help="API key every call carries")
def mcp(edge_url: str | None, key: str | None) -> None:
    """Serve the agent tools (MCP) on stdin and stdout, for a desktop agent."""
    import asyncio

    from edge.agent_stdio import serve_stdio

    asyncio.run(serve_stdio(edge_url, key))


@main.group()
def keys() -> None:
    """Issue, list and revoke API keys (stored hashed; Redis when CHAINTAPE_REDIS_URL is set)."""


def _keys():
    from edge.keys import open_keys
    from edge.settings import Settings

    settings = Settings.from_env()
    return open_keys(settings.redis_url, settings.home)


@keys.command("create")
@click.option("--name", required=True, help="who the key is for")
@click.option("--plan", required=True, type=click.Choice(sorted(PLANS)))
def create_key(name: str, plan: str) -> None:
    """Issue a key; it is printed once and only its hash is kept."""
    store = _keys()
    key, record = store.create(name, plan)
    _say(f"key {record.key_id} for {name} on the {plan} plan, kept in {store.where} (an edge "
         "answers it when it reads the same keys); shown once, keep it safe:")
    click.echo(key)


@keys.command("list")
def list_keys() -> None:
    """Every issued key: id, plan, name, created, revoked."""
    for r in _keys().all():
        click.echo(f"{r.key_id}  {r.plan:<8} {r.name:<24} {r.created_at}  "
                   f"{'revoked ' + r.revoked_at if r.revoked_at else 'active'}")


@keys.command("revoke")
@click.argument("key_id")
def revoke_key(key_id: str) -> None:
    """Revoke a key by id; calls with it get 401 from then on."""
    if _keys().revoke(key_id) is None:
        raise click.ClickException(f"no key with id {key_id}")
    _say(f"revoked {key_id}")
