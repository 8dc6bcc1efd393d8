"""End-to-end fixtures: one simulated lake, materialised and published, and an edge over it;
and a real chain followed live."""

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from sources.evm.devnet import Devnet, V2Market, start_node, v2_market
from sources.evm.rpc import quantity
from sources.lake import LakeWriter
from tests.conftest import BIN, edge_process, run_cli, until
from tests.edge.conftest import issue_key

E18 = 10**18
SWAP_TOPIC = "0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822"


@pytest.fixture(scope="session")
def home(tmp_path_factory):
    """One simulated home, materialised and published, for the whole run: the first test
    process to ask builds it under a file lock, the others wait for it and share it (tests
    that change a home change a copy)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _built(tmp_path_factory.mktemp("home"))
    shared = tmp_path_factory.getbasetemp().parent / "e2e-home"
    with open(shared.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / ".built").exists():
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            _built(shared)
            (shared / ".built").touch()
    return shared


def _built(home):
    sim = run_cli(["simulate", "--chains", "6", "--days", "2", "--swaps", "6000", "--seed", "3"],
                  home)
    assert sim.returncode == 0, sim.stderr
    done = run_cli(["materialize"], home)
    assert done.returncode == 0, done.stderr
    assert "check passed chains/chain_records:schema_and_meaning_rules" in done.stderr
    return home


@pytest.fixture(scope="session")
def edge(home):
    with edge_process(home, CHAINTAPE_POLL_SECONDS="0.2") as base:
        yield base


@pytest.fixture(scope="module")
def api(home, edge):
    """A client with a key of its own."""
    key = issue_key(home, "internal")
    with httpx.Client(base_url=edge + "/api/v1", headers={"X-API-Key": key},
                      timeout=30) as client:
        yield client


@pytest.fixture(scope="session")
def lake(home) -> LakeWriter:
    return LakeWriter(home / "lake")


def stop(procs: list[subprocess.Popen]) -> None:
    """Stop processes: each is asked, then killed if it has not stopped after 30 s."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pepe_market(net: Devnet, trader_weth: int) -> tuple[V2Market, str, str]:
    """A V2 market whose PEPE/WETH pool holds 1,000 WETH and 1,000,000 PEPE, and whose
    account 1 holds `trader_weth` and may trade both: the market, PEPE and the pool."""
    market = v2_market(net)
    pepe = market.token("Pepe", "PEPE", 10**9 * E18)
    pair = market.pair(pepe)
    market.approve(0, market.quote, pepe)
    weth_is_0 = sorted([pepe, market.quote])[0] == market.quote
    reserves = (1_000 * E18, 1_000_000 * E18)
    market.add_liquidity(pair, *(reserves if weth_is_0 else reserves[::-1]))
    market.transfer(market.quote, 1, trader_weth)
    market.approve(1, market.quote, pepe)
    return market, pepe, pair


@contextlib.contextmanager
def devnet_on(chain_id: int = 31337) -> Iterator[Devnet]:
    """A devnet client of a new anvil node; the node ends after."""
    node = start_node(chain_id=chain_id)
    net = Devnet(node.url)
    try:
        yield net
    finally:
        net.close()
        node.stop()


def ingested(home, rpc_url: str, venues: str, *extra: str) -> None:
    """A chain followed to its head into `home`'s lake from a venues file's text, then
    materialised."""
    path = home / "venues.yaml"
    path.write_text(venues)
    done = run_cli(["ingest", "evm", "--rpc", rpc_url, "--venues", str(path), *extra], home)
    assert done.returncode == 0, done.stderr
    made = run_cli(["materialize"], home)
    assert made.returncode == 0, made.stderr


def swap_id(receipt: dict) -> str:
    """The stream event id of a receipt's Swap log (block:log)."""
    log = next(entry for entry in receipt["logs"] if entry["topics"][0] == SWAP_TOPIC)
    return f"{quantity(log['blockNumber'])}:{quantity(log['logIndex'])}"


@pytest.fixture(scope="module")
def evm_live(tmp_path_factory):
    """A pair with liquidity and one buy, published; then the follower, the tail and an edge
    keep running."""
    home = tmp_path_factory.mktemp("streams-home")
    node = start_node()
    net = Devnet(node.url)
    procs: list[subprocess.Popen] = []
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    try:
        market, pepe, pair = pepe_market(net, 100 * E18)
        first = market.swap(pair, market.quote, E18, 1)
        venues = home / "venues.yaml"
        venues.write_text(market.venues_file())
        procs.append(subprocess.Popen(
            [str(BIN / "chaintape"), "ingest", "evm", "--rpc", node.url, "--venues",
             str(venues), "--follow", "--poll", "0.2", "--confirmations", "0"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        lake = LakeWriter(home / "lake")
        until(lambda: lake.progress() is not None, 120, "the follower's first mark")
        made = run_cli(["materialize"], home)
        assert made.returncode == 0, made.stderr
        procs.append(subprocess.Popen([str(BIN / "chaintape"), "tail", "--poll", "0.1"],
                                      env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        with edge_process(home, CHAINTAPE_LIVE_POLL_SECONDS="0.1",
                          CHAINTAPE_STREAM_HEARTBEAT_SECONDS="0.5",
                          CHAINTAPE_ORACLE_UPSTREAM="lake") as base:
            yield {"home": home, "base": base + "/api/v1", "market": market, "pepe": pepe,
                   "key": {"X-API-Key": issue_key(home, "internal")},
                   "pair": pair.lower(), "first": first, "chain_id": net.rpc.call("eth_chainId"),
                   "net": net}
    finally:
        stop(procs)
        net.close()
        node.stop()
