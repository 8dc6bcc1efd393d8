"""End-to-end fixtures: one simulated lake, materialised and published, and an edge over it."""

import pytest

from tests.conftest import edge_process, run_cli


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
