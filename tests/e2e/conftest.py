"""End-to-end fixtures: one simulated lake, materialised and published, and an edge over it."""

import httpx
import pytest

from sources.lake import Lake
from tests.conftest import edge_process, run_cli
from tests.edge.conftest import issue_key


@pytest.fixture(scope="session")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
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
def lake(home) -> Lake:
    return Lake(home / "lake")
