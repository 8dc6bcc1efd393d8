"""A real chain's quote priced by a Hermes upstream: here a second chaintape edge (the run's
simulated home), whose answers the test asks itself. A swap's USD volume is its amount times
the upstream's benchmark of its block's second (the first update published in it); the stream
writes the seconds between blocks; a follower killed (SIGKILL) and started again leaves no
second twice and misses none a swap stands at."""

import os
import signal
import subprocess
import time

import httpx
import polars as pl
import pytest
import yaml

from sources.evm.devnet import Devnet, start_node
from sources.evm.rpc import quantity
from sources.hermes import own_id
from sources.lake import LakeWriter
from tests.conftest import BIN, edge_process, run_cli, until
from tests.e2e.conftest import pepe_market
from tests.sources.evm.test_ingest import out_for

E18 = 10**18


@pytest.fixture(scope="module")
def eth_usd(edge) -> str:
    """The upstream's ETH/USD feed, by the id it lists it under."""
    listed = httpx.get(edge + "/v2/price_feeds", params={"query": "eth/usd"}, timeout=30).json()
    return next(f["id"] for f in listed if f["attributes"]["symbol"] == "Crypto.ETH/USD")


def benchmark(edge: str, feed: str, second: int) -> float:
    """The upstream's first ETH/USD price published in `second`, in USD."""
    answer = httpx.get(f"{edge}/v2/updates/price/{second}", params={"ids[]": feed}, timeout=30)
    assert answer.status_code == 200, answer.text
    price = answer.json()["parsed"][0]["price"]
    # The upstream publishes every 400 ms: each second has its own first update.
    assert price["publish_time"] == second
    return int(price["price"]) * 10.0 ** price["expo"]


def hermes_venues(market, feed: str) -> str:
    document = yaml.safe_load(market.venues_file())
    document["quotes"] = [{"token": market.quote, "hermes": "0x" + feed}]
    return yaml.safe_dump(document)


def block_second(net: Devnet, receipt: dict) -> int:
    header = net.rpc.call("eth_getBlockByNumber", receipt["blockNumber"], False)
    return quantity(header["timestamp"])


def next_second() -> None:
    """Wait for the wall clock's next second: the next block has a second of its own."""
    now = time.time()
    until(lambda: time.time() >= int(now) + 1, what="the next second")


def hermes_rows(lake: LakeWriter, feed: str) -> pl.DataFrame:
    return lake.read("oracle_updates").filter(pl.col("feed_id") == own_id(feed)).sort(
        "publish_time")


@pytest.mark.stack(seconds=27)
def test_each_swap_is_priced_at_the_benchmark_of_its_blocks_second(edge, eth_usd, tmp_path):
    node = start_node()
    net = Devnet(node.url)
    try:
        market, pepe, pair = pepe_market(net, 10 * E18)
        next_second()
        buy = market.swap(pair, market.quote, E18, 1)
        next_second()
        sell = market.swap(pair, pepe, 400 * E18, 1)
        venues = tmp_path / "venues.yaml"
        venues.write_text(hermes_venues(market, eth_usd))
        refused = run_cli(["ingest", "evm", "--rpc", node.url, "--venues", str(venues)],
                          tmp_path)
        assert refused.returncode == 2 and "--hermes URL" in refused.stderr, refused.stderr
        done = run_cli(["ingest", "evm", "--rpc", node.url, "--venues", str(venues),
                        "--hermes", edge], tmp_path)
        assert done.returncode == 0, done.stderr
        t_buy, t_sell = block_second(net, buy), block_second(net, sell)
        p_buy, p_sell = benchmark(edge, eth_usd, t_buy), benchmark(edge, eth_usd, t_sell)

        lake = LakeWriter(tmp_path / "lake")
        rows = hermes_rows(lake, eth_usd)
        assert set(rows["source"]) == {"hermes"}
        stored = dict(zip(rows["publish_time"], rows["price"] * 10.0 ** rows["expo"],
                          strict=True))
        assert stored[t_buy] == pytest.approx(p_buy, rel=1e-12)
        assert stored[t_sell] == pytest.approx(p_sell, rel=1e-12)
        feeds = lake.read("oracle_feeds")
        assert feeds.select("feed_id", "compatible_id", "source").rows() == [
            (own_id(eth_usd), eth_usd, "hermes")]

        made = run_cli(["materialize"], tmp_path)
        assert made.returncode == 0, made.stderr
        r_weth, r_pepe = 1_000 * E18, 1_000_000 * E18
        bought = out_for(E18, r_weth, r_pepe)
        paid = out_for(400 * E18, r_pepe - bought, r_weth + E18)
        with edge_process(tmp_path, CHAINTAPE_ORACLE_UPSTREAM="lake") as served:
            row = httpx.get(f"{served}/api/v1/chains/devnet/pairs/{pair}", timeout=30).json()
            assert row["txn"]["m5"]["buy_volume"] == pytest.approx(1.0 * p_buy, rel=1e-9)
            assert row["txn"]["m5"]["sell_volume"] == pytest.approx(paid / E18 * p_sell,
                                                                    rel=1e-9)
            # The chain's feed is served under the upstream's id, its own id beside it.
            listed = httpx.get(f"{served}/v2/price_feeds", timeout=30).json()
            assert [(f["id"], f["attributes"]["oracle_id"]) for f in listed] == [
                (eth_usd, own_id(eth_usd))]
    finally:
        net.close()
        node.stop()


@pytest.mark.stack(seconds=7)
def test_the_stream_writes_between_blocks_and_a_killed_follower_resumes(edge, eth_usd,
                                                                       tmp_path):
    node = start_node()
    net = Devnet(node.url)
    env = {**os.environ, "CHAINTAPE_HOME": str(tmp_path)}
    venues = tmp_path / "venues.yaml"
    lake = LakeWriter(tmp_path / "lake")

    def follower() -> subprocess.Popen:
        return subprocess.Popen(
            [str(BIN / "chaintape"), "ingest", "evm", "--rpc", node.url, "--venues",
             str(venues), "--follow", "--poll", "0.2", "--confirmations", "0",
             "--hermes", edge + "?channel=real_time"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)

    running = None
    try:
        market, pepe, pair = pepe_market(net, 10 * E18)
        venues.write_text(hermes_venues(market, eth_usd))
        running = follower()
        # No block comes: the stream's seconds are committed all the same, one after another.
        streamed = until(lambda: lake.progress() is not None and hermes_rows(
            lake, eth_usd).filter(pl.col("publish_time") > block_second(
                net, {"blockNumber": hex(net.block_number())})).height >= 3, timeout=60,
                what="three streamed seconds after the last block")
        assert streamed
        first = market.swap(pair, market.quote, E18, 1)
        until(lambda: (mark := lake.progress()) is not None
              and mark.meta["next_block"] > quantity(first["blockNumber"]), timeout=60,
              what="the swap's block marked")
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
        # While the follower is down, a swap the stream cannot see.
        next_second()
        second = market.swap(pair, pepe, 400 * E18, 1)
        running = follower()
        until(lambda: (mark := lake.progress()) is not None
              and mark.meta["next_block"] > quantity(second["blockNumber"]), timeout=60,
              what="the second swap's block marked")

        rows = hermes_rows(lake, eth_usd)
        assert rows["publish_time"].is_unique().all()
        seconds = rows["publish_time"].to_list()
        assert seconds == sorted(seconds)
        stored = dict(zip(seconds, rows["price"] * 10.0 ** rows["expo"], strict=True))
        for swap in (first, second):
            at = block_second(net, swap)
            assert stored[at] == pytest.approx(benchmark(edge, eth_usd, at), rel=1e-12)
    finally:
        if running is not None and running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
            running.wait()
        net.close()
        node.stop()
