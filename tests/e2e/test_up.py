"""The first command of the README: `chaintape up` simulates up to now, goes live, materialises,
publishes and serves over a real socket, and keeps publishing as the market lands; and what
`chaintape serve` says of where it listens."""

import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import dagster as dg
import httpx
import polars as pl
import pytest

from core.feeds import FEED_BY_BASE
from core.store import LocalStore
from publish.reader import LATEST
from publish.tail import read_pointer
from sources.lake import LakeWriter
from tests.conftest import BIN, children, free_port, run_cli, until, wait_http


@pytest.mark.stack(seconds=99)
def test_up_serves_what_it_just_published(tmp_path) -> None:
    port = free_port()
    env = {**os.environ, "CHAINTAPE_HOME": str(tmp_path), "DAGSTER_HOME": str(tmp_path / "dagster"),
           "PORT": str(port), "CHAINTAPE_LAKE_POLL_SECONDS": "2"}
    up = subprocess.Popen([str(BIN / "chaintape"), "up", "--swaps", "3000"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said: list[str] = []
    heard: list[float] = []
    listening = threading.Event()

    def read() -> None:
        with up.stderr:
            for line in up.stderr:
                said.append(line)
                if line.startswith(f"edge listening on http://127.0.0.1:{port}"):
                    heard.append(time.time())
                    listening.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # Simulating and materialising come first; the edge says where it listens only once
        # they are done and it accepts connections.
        assert listening.wait(timeout=300), "".join(said)
        base = f"http://127.0.0.1:{port}"
        chains = httpx.get(f"{base}/api/v1/chains?limit=100", timeout=30)
        assert chains.status_code == 200
        # Six simulated chains, each listed by the snapshot the run published.
        assert len(chains.json()["items"]) == 6
        first = httpx.get(f"{base}/api/v1/status", timeout=30).json()
        assert first["status"] == "ok", first
        # Live: the history ends at the moment `up` started and the market goes on, so the
        # price an hour ago is in the oracle's history...
        hour_ago = int(time.time()) - 3600
        feed = FEED_BY_BASE["BTC"].feed_id
        update = httpx.get(f"{base}/v2/updates/price/{hour_ago}",
                           params={"ids[]": feed, "parsed": "true"}, timeout=30)
        assert update.status_code == 200, update.text
        assert hour_ago <= update.json()["parsed"][0]["price"]["publish_time"] < hour_ago + 60
        # ...and the lake sensor publishes again as the market lands: the watermark moves on.
        now = until(lambda: (found := httpx.get(f"{base}/api/v1/status", timeout=30).json())[
            "snapshot"]["as_of"] > first["snapshot"]["as_of"] and found, 480,
            "a later snapshot served", every=1.0)
        # A refresh run's process says its steps, not Dagster's notices of preview features.
        assert not [line for line in said if "Warning" in line], said
        # The refreshes keep up: the first after start-up pays the daemon's and the first run's
        # start on top of its own (over 120 s on a loaded machine), the next trail by less.
        def kept_up() -> dict | None:
            body = httpx.get(f"{base}/api/v1/status", timeout=30).json()
            return body if body["status"] == "ok" else None

        try:
            now = until(kept_up, 240, "the status ok again")
        except TimeoutError:
            raise AssertionError(runs_of(tmp_path / "dagster")) from None
        assert now["watermark"]["trails_now_seconds"] < 120, now
        assert up.poll() is None
        # A bad publish (LATEST torn) stops nothing: the tail goes on publishing on the last
        # good snapshot.
        store = LocalStore(tmp_path / "store")
        seq = read_pointer(store)["seq"]
        (tmp_path / "store" / LATEST).write_bytes(b'{"snapshot_id": ')
        until(lambda: read_pointer(store)["seq"] > seq + 2, 60, "tails after a torn LATEST")
        # A component killed is started again, and said; the others go on.
        edge = child_of(up.pid, " serve")
        os.kill(edge, signal.SIGKILL)
        until(lambda: any("the edge restarted" in line for line in said), 60, "the restart")
        assert any(line.startswith("the edge stopped (exit -9); restarting it in")
                   for line in said)
        wait_http(f"{base}/api/v1/status", timeout=60)
        # Started while LATEST was torn, the new edge serves the next good publish.
        until(lambda: httpx.get(f"{base}/api/v1/chains", timeout=30).status_code == 200, 180,
              "the next good publish served")
        assert up.poll() is None
    finally:
        up.terminate()
        try:
            up.wait(timeout=30)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        reader.join(timeout=30)
    # Stopping `up` stops everything it started: nothing is left listening.
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/api/v1/status", timeout=2)
    # Published before it served: the first run's snapshot step succeeded (as its instance
    # recorded it) before the edge said it listens.
    instance = dg.DagsterInstance.from_config(str(tmp_path / "dagster"))
    first = instance.get_runs(ascending=True, limit=1)[0]
    published = [e.timestamp for e in instance.all_logs(first.run_id)
                 if e.dagster_event is not None and e.step_key == "publish__snapshot"
                 and e.dagster_event.event_type_value == "STEP_SUCCESS"]
    assert len(published) == 1 and published[0] < heard[0]


def runs_of(dagster_home) -> str:
    """Each run of a Dagster home: job, status, and seconds from queued to started to ended."""
    instance = dg.DagsterInstance.from_config(str(dagster_home))
    return "\n".join(
        f"{r.dagster_run.job_name} {r.dagster_run.status.value} queued {r.create_timestamp:%H:%M:%S}"
        f" started +{(r.start_time or 0) - r.create_timestamp.timestamp():.1f}s"
        f" ran {(r.end_time or time.time()) - (r.start_time or time.time()):.1f}s"
        for r in instance.get_run_records(ascending=True))


def child_of(parent: int, marked: str) -> int:
    """The child process of `parent` whose command line holds `marked`."""
    found = children(parent, marked)
    if not found:
        raise LookupError(f"no child of {parent} runs{marked}")
    return min(found)


def test_serve_says_it_listens_only_once_it_accepts_connections(home) -> None:
    port = free_port()
    env = {**os.environ, "CHAINTAPE_HOME": str(home)}
    serve = subprocess.Popen([str(BIN / "chaintape"), "serve", "--port", str(port)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = serve.stderr.readline()
        assert line.startswith(f"edge listening on http://127.0.0.1:{port}")
        # Said, so already bound: a connection made at once is accepted.
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    finally:
        serve.terminate()
        serve.communicate(timeout=30)


def test_serve_on_a_port_taken_says_so_and_fails(home) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(["serve", "--port", str(port)], home)
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "edge listening" not in done.stderr


def test_step_lines_reach_the_terminal_around_the_runs_capture(home, tmp_path) -> None:
    """A run captures standard error into its compute log and mirrors it back with `tail -F`,
    which drops what arrives in its last second (the last steps' lines): the step lines go to
    the terminal directly, so every one is said and none passes through the capture. A long
    step says how far it has come: the cohorts' members each lake day of first buys folded,
    then each chain made. On a copy of the shared home: a product written again there would
    no longer be the one its snapshot recorded."""
    copy = tmp_path / "home"
    shutil.copytree(home, copy, ignore=shutil.ignore_patterns("edge-parts", "store"))
    home = copy
    done = run_cli(["materialize", "--select", "chains/config,wallets/cohort_members"], home)
    assert done.returncode == 0, done.stderr
    said = [line.split("] ", 1)[1].split(None, 1) for line in done.stderr.splitlines()
            if "s] " in line]
    # The product's schema check runs in its own step: said before the step is done.
    assert [" ".join(w) for w in said if "chains" in w[1]] == [
        "check passed chains/config:schema_and_meaning_rules", "done chains__config"]
    lake = LakeWriter(home / "lake")
    days = lake.scan("swaps").select(pl.col("block_time").dt.date().n_unique()).collect().item()
    chains = sorted(lake.scan("tokens").select(pl.col("chain_id").unique()).collect()["chain_id"])
    step = "wallets__cohort_members: cohorts:"
    progress = [what for kind, what in said if kind == "progress"]
    assert progress[:days] == [f"{step} first buys of {n}/{days} lake day(s)"
                               for n in range(1, days + 1)]
    assert [what.split(" (")[0] for what in progress[days:]] == [
        f"{step} chain {c}" for c in chains]
    assert ["done", "wallets__cohort_members"] in said
    run = dg.DagsterInstance.from_config(str(home / "dagster")).get_runs(limit=1)[0]
    captured = list((home / "dagster" / "storage" / run.run_id).rglob("*.err"))
    assert captured and all("chains__config" not in path.read_text() for path in captured)
