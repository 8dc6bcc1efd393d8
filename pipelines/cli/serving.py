"""The edge and what it serves with: serve, ui, mcp, keys."""

import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import click

from edge.billing.plans import PLANS
from pipelines.cli.common import REPO, say

# An edge worker replaced: the fresh one starts, the old one serves on this long beside it. The
# fresh one listens only once it has loaded the snapshot (~2 s at 1M on a quiet machine; 10 s
# once fell short on one busy on both cores), and until one listens a connection is refused.
RESPAWN_S, RSS_SAMPLE_S = 30.0, 5


@click.command()
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
    # The mark alone, not the lake's tables: this process only starts the edge's workers.
    from core.progress import FOLLOWER, default_root, read_progress
    from core.store import open_store

    if os.environ.get("CHAINTAPE_ORACLE_UPSTREAM"):
        return
    mark = read_progress(open_store(default_root()))
    if mark is not None and mark.writer == FOLLOWER:
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
        say(f"edge listening on http://{host}:{port} - try:")
        for path in ("/config", "/chains", "/chains?limit=2"):
            say(f"  curl {base}{path}")

    threading.Thread(target=announce, name="announce", daemon=True).start()


@click.command()
@click.option("--port", default=3000, show_default=True)
def ui(port: int) -> None:
    """Open the Dagster UI over the same lake and instance."""
    say(f"Dagster UI on http://127.0.0.1:{port}")
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "dagster"), "dev", "-m", "pipelines.definitions",
                    "-p", str(port)], check=False, cwd=REPO)


@click.command()
@click.option("--edge", "edge_url", default=lambda: os.environ.get("CHAINTAPE_EDGE_URL"),
              show_default="$CHAINTAPE_EDGE_URL, else the local snapshot",
              help="base URL of the edge to answer from")
@click.option("--key", default=lambda: os.environ.get("CHAINTAPE_API_KEY"),
              show_default="$CHAINTAPE_API_KEY", help="API key every call carries")
def mcp(edge_url: str | None, key: str | None) -> None:
    """Serve the agent tools (MCP) on stdin and stdout, for a desktop agent."""
    import asyncio

    from edge.agents.stdio import serve_stdio

    asyncio.run(serve_stdio(edge_url, key))


@click.group()
def keys() -> None:
    """Issue, list and revoke API keys (stored hashed; Redis when CHAINTAPE_REDIS_URL is set)."""


def _keys():
    from edge.billing.keys import open_keys
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
    say(f"key {record.key_id} for {name} on the {plan} plan, kept in {store.where} (an edge "
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
    say(f"revoked {key_id}")
