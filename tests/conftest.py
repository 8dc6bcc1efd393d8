"""Shared fixtures: a small simulated lake, processes on loopback ports."""

import os
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.ports import free_port
from sources.lake import LakeWriter
from sources.simulator import SimulationConfig, simulate

SMALL = SimulationConfig(chains=6, days=2, swaps=6_000, seed=3,
                         end=datetime(2026, 11, 20, tzinfo=UTC))
BIN = Path(sys.executable).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The costliest first (a stack test's `seconds`, a module's `cost`): the two test
    processes take tests (the fast tier, whole modules) in this order, and a long one met last
    would leave the other process idle at the end. The rest keep their order."""
    def seconds(item: pytest.Item) -> float:
        mark = item.get_closest_marker("stack") or item.get_closest_marker("cost")
        return 0.0 if mark is None else float(mark.kwargs.get("seconds", 0))

    items.sort(key=seconds, reverse=True)


def until(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition",
          every: float = 0.05) -> Any:
    """Poll `predicate` every `every` seconds (slower for a keyless edge's budget) until it
    answers something true, and return that; TimeoutError naming `what` after `timeout`
    seconds."""
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(every)
    return found


def command_of(pid: int) -> list[str]:
    """A process's command line, argument by argument (none while it is between two images,
    or gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmd:
            return [a for a in cmd.read().decode().split("\0") if a]
    except OSError:
        return []


def children(parent: int, marked: str) -> dict[int, list[str]]:
    """The child processes of `parent` whose command line holds `marked`, with their commands."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue
        if ppid == parent and marked in " ".join(args := command_of(int(pid))):
            found[int(pid)] = args
    return found


def wait_http(url: str, timeout: float = 30.0) -> None:
    """Block until `url` answers (any status)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(url)


@contextmanager
def process(args: list[str], url: str, env: dict | None = None):
    """A server process, running until the block ends; yields once `url` answers."""
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(url)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def edge_process(home: Path, interface: str = "rsgi", **env):
    """`chaintape serve` over `home` on a free loopback port, through `interface`."""
    port = free_port()
    full = {**os.environ, "CHAINTAPE_HOME": str(home), **env}
    return process([str(BIN / "chaintape"), "serve", "--port", str(port), "--interface",
                    interface], f"http://127.0.0.1:{port}", full)


@pytest.fixture(scope="session")
def small_lake(tmp_path_factory) -> LakeWriter:
    """A six-chain, two-day lake of about 6,000 swaps."""
    lake = LakeWriter(tmp_path_factory.mktemp("lake"))
    simulate(SMALL, lake)
    return lake


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3 HTTP endpoint: a moto server process on a loopback port."""
    port = free_port()
    with process([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                 f"http://127.0.0.1:{port}") as url:
        yield url


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch):
    """boto3 pointed at the moto server with throwaway credentials."""
    for name, value in {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "test",
                        "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    return s3_endpoint


def run_cli(args: list[str], home: Path, **env) -> subprocess.CompletedProcess:
    """Run the chaintape command line with its home under `home`."""
    full = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
            **env}
    return subprocess.run([str(BIN / "chaintape"), *args], env=full, capture_output=True,
                          text=True, timeout=600)
