import os
import shutil
import signal
import subprocess
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from sources.lake import LakeError, LakeWriter
from sources.simulator import SimulationConfig, live_market, replayable, simulate
from tests.conftest import BIN, until

pytestmark = pytest.mark.cost(seconds=40)

CONFIG = SimulationConfig(chains=4, days=1, swaps=3_000, seed=5,
                          end=datetime(2026, 11, 20, tzinfo=UTC))
UNTIL = CONFIG.end + timedelta(minutes=40)
# What the market's state decides; hashes, routers and gas are drawn per batch.
STATE = {
    "swaps": ["chain_id", "block_number", "log_index", "block_time", "pair", "maker",
              "amount0_in", "amount1_in", "amount0_out", "amount1_out"],
    "reserves": ["chain_id", "block_number", "log_index", "pair", "reserve0", "reserve1"],
    "transfers": ["chain_id", "block_number", "log_index", "token", "from_address",
                  "to_address", "amount"],
    "heads": None, "oracle_updates": None, "liquidity_events": None,
    "perp_snapshots": None, "farm_pools": None,
}
# Read in time order, not key order: their readers sort them.
SORTED = {"oracle_updates": ["feed_id", "publish_time"],
          "perp_snapshots": ["chain_id", "market", "observed_at"],
          "farm_pools": ["chain_id", "farm_address", "pid", "observed_at"]}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    lake = LakeWriter(tmp_path_factory.mktemp("history"))
    simulate(CONFIG, lake)
    return lake


def copy(history: LakeWriter, to) -> LakeWriter:
    shutil.copytree(history.root, to)
    return LakeWriter(to)


def state(lake: LakeWriter) -> dict[str, pl.DataFrame]:
    pinned = lake.pinned()
    tables = {name: pinned.read(name).select(columns or pl.all())
              for name, columns in STATE.items()}
    return {name: frame.sort(SORTED[name]) if name in SORTED else frame
            for name, frame in tables.items()}


def assert_same_state(a: LakeWriter, b: LakeWriter) -> None:
    left, right = state(a), state(b)
    for name in STATE:
        assert left[name].equals(right[name]), name


def test_the_live_market_appends_after_the_history_with_every_rule_kept(history, tmp_path):
    lake = copy(history, tmp_path / "lake")
    before = {name: lake.read(name).height for name in STATE}
    market = live_market.run(lake, until=UNTIL)
    # Each chain produced every block whose timestamp has come, and none after: a block is
    # seen right after its timestamp, as on a real chain.
    for chain in market.chains:
        if chain.run.world.role == "stopped":
            continue
        upto = UNTIL.timestamp() - live_market.LAG_S.get(chain.run.world.role, 0.0)
        following = market.position.blocks[chain.run.world.template.chain_id]
        assert chain.run.clock.at(following - 1) <= upto < chain.run.clock.at(following)
    swaps = lake.read("swaps")
    added = swaps.height - before["swaps"]
    # 3,000 swaps a day on four chains, of which the stopped chain makes none: dozens in 40 min.
    assert 20 < added < 200
    key = ["chain_id", "block_number", "log_index"]
    old = history.read("swaps")
    new = swaps.join(old, on=key, how="anti")
    assert new.height == added and new["block_time"].max() <= UNTIL
    # Each chain's live blocks follow its history's (the lagging chain's from four minutes
    # before the end), in block order as read.
    last = old.group_by("chain_id").agg(last=pl.col("block_number").max())
    assert new.join(last, on="chain_id").filter(
        pl.col("block_number") <= pl.col("last")).is_empty()
    assert swaps.select(key).is_unique().all()
    assert swaps.group_by("chain_id").agg(pl.col("block_number").is_sorted())[
        "block_number"].all()
    # Heads every minute for each chain, an oracle update every ten seconds for each feed open.
    assert lake.read("heads").height - before["heads"] == 4 * 41
    # Every pool's reserves move by exactly each swap's amounts across the history's end.
    reserves = lake.read("reserves").filter(pl.col("chain_id") == 1)
    after = reserves.with_columns(
        before0=pl.col("reserve0").shift(1).over("pair"),
        before1=pl.col("reserve1").shift(1).over("pair"))
    joined = lake.read("swaps").filter(
        (pl.col("chain_id") == 1) & (pl.col("block_time") >= CONFIG.end)).join(
        after, on=["chain_id", "block_number", "pair"])
    assert joined.height > 0
    for r in joined.iter_rows(named=True):
        assert int(r["reserve0"]) == int(r["before0"]) + int(r["amount0_in"]) - int(
            r["amount0_out"])
        assert int(r["reserve1"]) == int(r["before1"]) + int(r["amount1_in"]) - int(
            r["amount1_out"])
    mark = lake.progress()
    assert mark is not None and mark.writer == "live" and mark.watermark == UNTIL
    # The perps venue (the lagging chain here, four minutes behind) snapshots each of its
    # five markets every 5 minutes: from 4 minutes before the end to 36 minutes after, the
    # grid (aligned on the end) holds 8 instants.
    snaps = lake.read("perp_snapshots").filter(pl.col("observed_at") >= CONFIG.end)
    assert snaps.height == 5 * 8
    assert snaps.group_by("market").len()["len"].to_list() == [8] * 5
    # Every verified farm pool of every chain but the stopped one is observed on the hour
    # (once in these 40 minutes); the unverified farm stays stale.
    farms = history.read("farm_pools")
    verified = farms.filter(pl.col("verified") & (pl.col("chain_id") != 8453)).select(
        "chain_id", "farm_address", "pid").unique().height
    new = lake.read("farm_pools").filter(pl.col("observed_at") >= CONFIG.end)
    assert new.height == verified > 0 and new["verified"].all()


def test_the_live_market_does_not_depend_on_how_its_blocks_are_batched(history, tmp_path):
    # A quarter of an hour: two dozen batches of 37 s, none on a minute's edge.
    until = CONFIG.end + timedelta(minutes=15)
    a = copy(history, tmp_path / "a")
    live_market.run(a, until=until)
    b = copy(history, tmp_path / "b")
    market = live_market.start(b)
    at = CONFIG.end.timestamp()
    while at < until.timestamp():
        at = min(at + 37.0, until.timestamp())
        live_market.commit(b, market, at)
    assert_same_state(a, b)


def test_a_batch_begun_and_not_marked_is_undone_and_the_writer_goes_on(history, tmp_path):
    whole = copy(history, tmp_path / "whole")
    live_market.run(whole, until=UNTIL)
    broken = copy(history, tmp_path / "broken")
    live_market.run(broken, until=CONFIG.end + timedelta(minutes=20))
    marked = broken.read("swaps").height
    # A writer that died after committing some of a batch's tables and before marking it.
    market = live_market.start(broken)
    tables = market.advance((CONFIG.end + timedelta(minutes=25)).timestamp())
    for name in ("oracle_updates", "reserves", "swaps"):
        broken.append(name, tables[name])
    assert LakeWriter(broken.root).read("swaps").height > marked
    assert broken.pinned().read("swaps").height == marked
    live_market.run(broken, until=UNTIL)
    assert_same_state(whole, broken)


@pytest.mark.stack(seconds=34)
def test_a_writer_killed_mid_append_resumes_with_no_gap_and_no_duplicate(history, tmp_path):
    whole = copy(history, tmp_path / "whole")
    end = CONFIG.end + timedelta(hours=3)
    live_market.run(whole, until=end)
    lake = copy(history, tmp_path / "killed")
    env = {**os.environ, "CHAINTAPE_HOME": str(tmp_path), "CHAINTAPE_LAKE": str(lake.root)}
    args = [str(BIN / "chaintape"), "live", "--until", end.isoformat(), "--every", "0"]
    def marked_again(first: object) -> bool:
        return lake.progress() != first

    def mid_batch(first: object) -> bool:
        # A table committed past the mark before the next mark: half a batch written.
        mark = lake.progress()
        return mark != first and mark is not None and lake.current_versions() != mark.versions

    for moment in (marked_again, mid_batch, mid_batch):
        writer = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        first = lake.progress()
        until(lambda first=first, moment=moment: moment(first), timeout=120,
             what=f"the writer at {moment.__name__}")
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        # What a reader pins is whole whatever the moment of the kill.
        assert lake.pinned().read("swaps").select("chain_id", "block_number",
                                                   "log_index").is_unique().all()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert_same_state(whole, lake)


def test_a_lake_written_when_blocks_came_a_block_late_is_simulated_again(history, tmp_path):
    """A lake whose live batches were written by the rule before (a block produced one block
    after its timestamp; its marks do not say `blocks_seen`) is not gone on from: the live
    market refuses it, saying how to make it again, and `up` simulates it again."""
    lake = copy(history, tmp_path / "lake")
    market = live_market.start(lake)
    live_market.commit(lake, market, (CONFIG.end + timedelta(minutes=20)).timestamp())
    mark = lake.progress()
    assert replayable(mark.meta)
    position = {k: v for k, v in mark.meta["position"].items() if k != "blocks_seen"}
    lake.mark(mark.watermark, mark.writer, mark.step, {**mark.meta, "position": position})
    assert not replayable(lake.progress().meta)
    with pytest.raises(LakeError, match=r"simulate it again \(`chaintape up --fresh`\)"):
        live_market.start(lake)


def test_a_history_an_earlier_simulator_made_is_refused_not_replayed(history, tmp_path):
    lake = copy(history, tmp_path / "lake")
    mark = lake.progress()
    assert mark is not None and mark.meta["made"] == "spans-1"
    # A history recorded without how it was made: an earlier simulator's.
    lake.mark(mark.watermark, mark.writer, mark.step,
              meta={k: v for k, v in mark.meta.items() if k != "made"})
    with pytest.raises(LakeError, match="earlier simulator made"):
        live_market.start(lake)
