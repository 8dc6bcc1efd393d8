"""Real chains: `ingest evm` (one chain, or every chain of a chains file) and `devnet`."""

import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.cli.common import launcher, said_under, say
from pipelines.supervise import Supervisor

if TYPE_CHECKING:
    from sources.evm.config import IngestConfig
    from sources.evm.ingest import Follower
    from sources.evm.rpc import Rpc
    from sources.lake import LakeWriter


@click.group()
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
    from sources.lake import LakeError, LakeWriter

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
    lake = LakeWriter(keep_open=True)
    rpc = Rpc(rpc_url, concurrency=rpc_concurrency, max_rps=max_rps)
    # Stopped by a signal as by Ctrl-C, whatever its parent left the signal set to.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        follower = _opened(rpc, config, lake, follow, {
            "confirmations": confirmations, "batch_blocks": batch_blocks,
            "from_block": from_block, "progress": said_under, "hermes": hermes})
        if hermes is not None and follow:
            hermes.start()
        say(f"following chain {follower.chain_id} ({config.chain.slug}) from block "
             f"{follower.cursor.next_block:,} -> {lake.root}"
             + (" (Ctrl-C stops it; it goes on from here next time)" if follow else ""))
        follower.run(to_block, follow, poll, renewal=Renewal(
            f"chain follower {config.chain.slug}", said_under,
            _resuming(sys.argv)) if follow else None)
    except ConfigError as err:
        raise click.ClickException(f"{venues_file}: {err}") from None
    except (RpcError, LakeError, HermesError) as err:
        raise click.ClickException(str(err)) from None
    except KeyboardInterrupt:
        say("stopped; the next `chaintape ingest evm` goes on from the last marked block")
    finally:
        rpc.close()
        if hermes is not None:
            hermes.stop()


def _opened(rpc: "Rpc", config: "IngestConfig", lake: "LakeWriter", follow: bool,
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
            say(f"{config.chain.slug}: the node does not answer ({err}); asking again in "
                 f"{UNREACHABLE_WAIT_S:g}s")
            time.sleep(UNREACHABLE_WAIT_S)


def _resuming(argv: list[str]) -> list[str]:
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


def chain_followers(chains_file: str, follow: bool, options: list[str],
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
    followers = chain_followers(chains_file, follow, options, rpc_concurrency, max_rps)
    supervisor = Supervisor(say)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        for slug, args in followers:
            supervisor.start(f"chain follower {slug}", launcher(args))
        if follow:
            supervisor.watch()
            return
        failed = [name for name, part in supervisor.components.items()
                  if part.process.wait() != 0]
        if failed:
            raise click.ClickException(f"{', '.join(failed)} stopped with an error (above)")
    except KeyboardInterrupt:
        say("stopped; each chain goes on from its last marked block next time")
    finally:
        supervisor.stop()


@click.command()
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
        say(f"devnet on {node.url} (chain {chain_id}), venues file {venues_file}; try:\n"
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
                say(f"launched NEW{launched}/WETH at {pairs[-1][0]}")
            time.sleep(every)
    except KeyboardInterrupt:
        say("devnet stopped")
    finally:
        net.close()
        node.stop()
