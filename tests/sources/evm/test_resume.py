"""A follower killed with SIGKILL at any moment goes on from its last marked block: the lake
ends equal to one ingested without a stop, with no gap and no duplicate."""

import json
import os
import signal
import subprocess

import polars as pl
import yaml

from sources.evm.config import parse
from sources.evm.ingest import Follower
from sources.evm.rpc import Rpc
from sources.lake import LakeWriter
from tests.conftest import BIN, until

E18 = 10**18
TABLES = {"swaps": ["block_number", "log_index"], "reserves": ["block_number", "log_index"],
          "transfers": ["block_number", "log_index"],
          "liquidity_events": ["block_number", "log_index"], "blocks": ["block_number"],
          "pairs": ["address"]}


def step_of(home) -> int:
    try:
        return int(json.loads((home / "lake" / "_progress.json").read_text())["step"])
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


def test_killed_at_any_moment_it_resumes_without_gap_or_duplicate(market, node, tmp_path):
    pair, pepe = market.pool("Pepe", "PEPE", 10**21, 10**24)
    for i in range(40):
        market.swap(pair, market.quote if i % 3 else pepe, (i + 1) * E18 // 10, 0)
    venues = tmp_path / "venues.yaml"
    venues.write_text(market.venues_file())
    home = tmp_path / "home"
    env = {**os.environ, "CHAINTAPE_HOME": str(home)}
    command = [str(BIN / "chaintape"), "ingest", "evm", "--rpc", node.url, "--venues",
               str(venues), "--batch-blocks", "1", "--confirmations", "2"]
    kills = 0
    for at_step in (4, 13, 27):
        follower = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        until(lambda at_step=at_step, follower=follower: step_of(home) >= at_step
              or follower.poll() is not None, 120, f"the follower's step {at_step}")
        if follower.poll() is None:
            os.kill(follower.pid, signal.SIGKILL)
            kills += 1
        follower.wait(30)
    assert kills == 3
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    whole = LakeWriter(tmp_path / "whole")
    with Rpc(node.url) as rpc:
        Follower.open(rpc, parse(yaml.safe_load(venues.read_text())), whole).run()
    resumed = LakeWriter(home / "lake")
    assert resumed.read("swaps").height == 40
    for name, key in TABLES.items():
        got, expected = resumed.read(name).sort(key), whole.read(name).sort(key)
        assert got.select(pl.struct(key).is_unique().all()).item(), name
        assert got.equals(expected), name
    assert resumed.progress().meta["next_block"] == whole.progress().meta["next_block"]
