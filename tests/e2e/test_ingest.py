"""From an RPC URL to served pairs: a V2 market on a real anvil node, ingested, materialised,
published and served; the figures worked out by hand from the pool's rule and the ETH/USD
answers the test sent its Chainlink aggregator."""

import httpx
import pytest

from sources.evm.devnet import Devnet, start_node, v2_market
from sources.evm.rpc import quantity
from tests.conftest import edge_process, run_cli
from tests.e2e.conftest import ingested, pepe_market
from tests.edge.conftest import issue_key
from tests.sources.evm.test_ingest import out_for

pytestmark = pytest.mark.cost(seconds=35)

E18 = 10**18
E8 = 10**8


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """Liquidity, a trader's buy and partial sell, a holder's transfer; ingested, materialised
    and served."""
    home = tmp_path_factory.mktemp("ingest-home")
    node = start_node()
    net = Devnet(node.url)
    try:
        market, pepe, pair = pepe_market(net, 10 * E18)
        # ETH is 3,000 USD (the aggregator's first answer) at the buy, 3,100 at the sell.
        buy = market.swap(pair, market.quote, E18, 1)
        net.rpc.call("evm_increaseTime", 60)
        market.answer(3_100 * E8)
        net.rpc.call("evm_increaseTime", 60)
        sell = market.swap(pair, pepe, 400 * E18, 1)
        market.transfer(pepe, 2, 100 * E18)
        venues = home / "venues.yaml"
        venues.write_text(market.venues_file())
        done = run_cli(["ingest", "evm", "--rpc", node.url, "--venues", str(venues)], home)
        assert done.returncode == 0, done.stderr
        assert "blocks 0.." in done.stderr
        made = run_cli(["materialize"], home)
        assert made.returncode == 0, made.stderr
        with edge_process(home) as base:
            yield {"home": home, "base": base, "pepe": pepe, "weth": market.quote, "pair": pair,
                   "buy": buy, "sell": sell, "accounts": net.accounts,
                   "times": {n: net.rpc.call("eth_getBlockByNumber", hex(n), False)["timestamp"]
                             for n in range(net.block_number() + 1)}}
    finally:
        net.close()
        node.stop()


# What the aggregator answered in force at the buy, at the sell and at the watermark (after
# the sell): its answers, as the fixture sent them.
P_BUY, P_SELL, P_NOW = 3_000.0, 3_100.0, 3_100.0


def get(chain, path: str) -> dict:
    answer = httpx.get(chain["base"] + "/api/v1" + path, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_pair_trades_windows_and_price(chain):
    r_weth, r_pepe = 1_000 * E18, 1_000_000 * E18
    bought = out_for(E18, r_weth, r_pepe)
    r_weth, r_pepe = r_weth + E18, r_pepe - bought
    paid = out_for(400 * E18, r_pepe, r_weth)
    r_weth, r_pepe = r_weth - paid, r_pepe + 400 * E18
    p_buy, p_sell, p_now = P_BUY, P_SELL, P_NOW

    trades = get(chain, f"/chains/devnet/pairs/{chain['pair']}/trades")["items"]
    swaps = [t for t in trades if t["tx_type"] in ("buy", "sell")]
    assert [t["tx_type"] for t in swaps] == ["sell", "buy"]
    assert [t["hash"] for t in swaps] == [chain["sell"]["transactionHash"],
                                          chain["buy"]["transactionHash"]]
    assert {t["maker_address"] for t in swaps} == {chain["accounts"][1]}
    pepe_amounts = sorted(t["event_data"]["amount0" if t["event_data"]["price_usd0"] < 100
                                          else "amount1"] for t in swaps)
    assert pepe_amounts == pytest.approx(sorted([bought / E18, 400.0]), rel=1e-9)

    row = get(chain, f"/chains/devnet/pairs/{chain['pair']}")
    m5 = row["txn"]["m5"]
    assert (m5["buys"], m5["sells"], m5["buyers"], m5["sellers"]) == (1, 1, 1, 1)
    assert m5["buy_volume"] == pytest.approx(1.0 * p_buy, rel=1e-9)
    assert m5["sell_volume"] == pytest.approx(paid / E18 * p_sell, rel=1e-9)
    pepe_row = next(t for t in row["tokens"] if t["symbol"] == "PEPE")
    assert pepe_row["price_usd"] == pytest.approx(r_weth / r_pepe * p_now, rel=1e-9)
    assert pepe_row["reserve"] == pytest.approx(r_pepe / E18, rel=1e-12)


def test_the_traders_pnl_over_a_buy_and_a_partial_sell(chain):
    r_weth, r_pepe = 1_000 * E18, 1_000_000 * E18
    bought = out_for(E18, r_weth, r_pepe)
    paid = out_for(400 * E18, r_pepe - bought, r_weth + E18)
    p_buy, p_sell = P_BUY, P_SELL
    cost_per_pepe = 1.0 * p_buy / (bought / E18)
    realized = paid / E18 * p_sell - 400 * cost_per_pepe

    profile = get(chain, f"/chains/devnet/wallets/{chain['accounts'][1]}")
    day = next(m for m in profile["metrics"] if m["window"] == "1d")
    assert day["realized_pnl_usd"] == pytest.approx(realized, rel=1e-9)
    assert day["invested_usd"] == pytest.approx(1.0 * p_buy, rel=1e-9)
    assert (day["trades"], day["open_positions"], day["closed_positions"]) == (2, 1, 0)


def test_holders_after_transfers(chain):
    bought = out_for(E18, 1_000 * E18, 1_000_000 * E18)
    holders = get(chain, f"/chains/devnet/tokens/{chain['pepe']}/holders")["items"]
    balances = {h["address"]: h["balance"] for h in holders}
    accounts = chain["accounts"]
    assert balances == pytest.approx({
        accounts[0]: 10**9 - 1_000_000 - 100,
        accounts[1]: (bought - 400 * E18) / E18,
        accounts[2]: 100.0}, rel=1e-12)


def test_status_says_how_far_the_ingest_stands_behind_the_head(chain):
    status = get(chain, "/status")
    head = max(chain["times"])
    assert [(c["slug"], c["chain_id"], c["latest_block"], c["head_block"])
            for c in status["chains"]] == [("devnet", 31337, head, head)]


def test_serve_over_a_real_lake_serves_its_own_feeds(chain):
    # No upstream named: the edge sees the lake's writer (the chain follower), not the
    # simulator's price process.
    status = httpx.get(f"{chain['base']}/api/v1/status", timeout=30).json()
    assert status["upstreams"]["oracle"]["kind"] == "lake"


@pytest.mark.stack(seconds=140)
def test_up_follows_a_chain_and_keeps_publishing(tmp_path):
    """The README's real-chain commands: `chaintape devnet`, then `chaintape up --chains`,
    serving the chain's pairs and publishing again as its blocks land, while new pools appear
    (one every 10 s): the refreshes after the first publish pass, the new pools counted."""
    import os
    import signal
    import subprocess

    import dagster as dg
    import yaml

    from tests.conftest import BIN, free_port, until, wait_http

    node_port, edge_port = free_port(), free_port()
    venues = tmp_path / "venues.yaml"
    env = {**os.environ, "CHAINTAPE_HOME": str(tmp_path / "node")}
    devnet = subprocess.Popen([str(BIN / "chaintape"), "devnet", "--port", str(node_port),
                               "--venues", str(venues), "--every", "0.5", "--chain-id", "7",
                               "--slug", "devnet-seven", "--new-pool-every", "10"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    home = tmp_path / "home"
    up = None
    try:
        until(lambda: venues.exists() or devnet.poll() is not None, timeout=60,
              what="the devnet's venues file")
        assert devnet.poll() is None
        chains = tmp_path / "chains.yaml"
        chains.write_text(yaml.safe_dump({"chains": [
            {"rpc": f"http://127.0.0.1:{node_port}", "venues": venues.name}]}))
        up = subprocess.Popen(
            [str(BIN / "chaintape"), "up", "--chains", str(chains)],
            env={**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                 "PORT": str(edge_port), "CHAINTAPE_LAKE_POLL_SECONDS": "2"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{edge_port}/api/v1"
        wait_http(base + "/status", timeout=300)
        key = {"X-API-Key": issue_key(home, "internal")}
        first = httpx.get(base + "/status", headers=key, timeout=30).json()
        assert first["status"] == "ok", first
        assert [(c["slug"], c["chain_id"]) for c in first["chains"]] == [("devnet-seven", 7)]
        pairs = httpx.get(base + "/pairs/new", params={"chains": "devnet-seven"}, headers=key,
                          timeout=30).json()
        tickers = {p["ticker"] for p in pairs["items"]}
        assert {"PEPE/WETH", "WOJAK/WETH"} <= tickers

        def record() -> dict:
            return httpx.get(base + "/chains", headers=key, timeout=30).json()["items"][0]

        counted = record()["pairs"]

        def runs(status: dg.DagsterRunStatus) -> list[str]:
            with dg.DagsterInstance.from_config(str(home / "dagster")) as instance:
                return [run.run_id for run in instance.get_runs(
                    filters=dg.RunsFilter(statuses=[status]))]

        # Refreshes after the first publish until one counts the new pools: each passes its
        # checks and publishes.
        until(lambda: record()["pairs"] > counted, timeout=600, every=1.0,
              what="a refresh counting the new pools")
        # A run's publish is served before the run itself is recorded as ended.
        until(lambda: len(runs(dg.DagsterRunStatus.SUCCESS)) >= 2, timeout=120, every=1.0,
              what="the refresh recorded as a success")
        assert runs(dg.DagsterRunStatus.FAILURE) == []
        now = httpx.get(base + "/status", headers=key, timeout=30).json()
        assert now["snapshot"]["as_of"] > first["snapshot"]["as_of"], now
        assert now["chains"][0]["latest_block"] > first["chains"][0]["latest_block"]
        assert up.poll() is None and devnet.poll() is None
    finally:
        for process in (up, devnet):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(60)
    # Stopped, each stops what it started: the node and the edge no longer answer.
    for port in (node_port, edge_port):
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=2)


def served_pool(home, pair: str) -> tuple[list[dict], dict]:
    """A pair's trades and row as an edge over `home` serves them."""
    with edge_process(home) as base:
        trades = httpx.get(f"{base}/api/v1/chains/devnet/pairs/{pair}/trades",
                           timeout=30).json()["items"]
        row = httpx.get(f"{base}/api/v1/chains/devnet/pairs/{pair}", timeout=30).json()
    return trades, row


def assert_pool_as_on_chain(net: Devnet, market, pair: str, pepe: str, row: dict,
                            p_now: float) -> None:
    """The served row's reserves, price and liquidity are the pool's `getReserves()` now,
    priced at `p_now`, the aggregator's ETH answer in force at the lake's watermark."""
    reserve0, reserve1, _ = net.view(pair, "getReserves()", ["uint112", "uint112", "uint32"])
    r_weth, r_pepe = (reserve0, reserve1) if market.quote < pepe else (reserve1, reserve0)
    sides = {t["symbol"]: t for t in row["tokens"]}
    assert sides["WETH"]["reserve"] == pytest.approx(r_weth / E18, rel=1e-12)
    assert sides["PEPE"]["reserve"] == pytest.approx(r_pepe / E18, rel=1e-12)
    assert sides["PEPE"]["price_usd"] == pytest.approx(r_weth / r_pepe * p_now, rel=1e-9)
    assert row["liquidity_usd"] == pytest.approx(2 * r_weth / E18 * p_now, rel=1e-9)


@pytest.mark.stack(seconds=64)
def test_a_reorg_is_corrected_by_the_next_refresh(tmp_path):
    """An ETH answer and two blocks of swaps ingested and published, then replaced by a reorg
    (another answer, other swaps): after the next ingest and refresh, the edge serves the
    canonical swaps only, and the pool's reserves, price and liquidity as the chain holds them,
    priced by the canonical answer; reading the range again from the fork changes none of
    it."""
    node = start_node()
    net = Devnet(node.url)
    home = tmp_path / "home"
    try:
        market = v2_market(net)
        pair, pepe = market.pool("Pepe", "PEPE", 1_000 * E18, 1_000_000 * E18)
        fork = net.rpc.call("evm_snapshot")
        net.rpc.call("evm_increaseTime", 60)
        orphaned = [market.answer(3_500 * E8),
                    *(market.swap(pair, market.quote, E18, 0) for _ in range(2))]
        venues = home / "venues.yaml"
        home.mkdir()
        venues.write_text(market.venues_file())
        ingest = ["ingest", "evm", "--rpc", node.url, "--venues", str(venues),
                  "--confirmations", "2"]
        for command in (ingest, ["materialize"]):
            done = run_cli(command, home)
            assert done.returncode == 0, done.stderr
        assert net.rpc.call("evm_revert", fork)
        net.rpc.call("evm_increaseTime", 90)
        market.answer(2_800 * E8)
        canonical = [market.swap(pair, market.quote, amount * E18, 0) for amount in (3, 5, 7)]
        done = run_cli(ingest, home)
        assert done.returncode == 0, done.stderr
        first_orphan = quantity(orphaned[0]["blockNumber"])
        assert f"(reorg: written again from block {first_orphan})" in done.stderr
        done = run_cli(["materialize"], home)
        assert done.returncode == 0, done.stderr
        trades, row = served_pool(home, pair)
        buys = [t["hash"] for t in trades if t["tx_type"] == "buy"]
        assert sorted(buys) == sorted(r["transactionHash"] for r in canonical)
        assert row["txn"]["m5"]["buys"] == 3
        assert_pool_as_on_chain(net, market, pair, pepe, row, 2_800.0)

        for command in ([*ingest, "--from-block", str(first_orphan)], ["materialize"]):
            done = run_cli(command, home)
            assert done.returncode == 0, done.stderr
        again, row = served_pool(home, pair)
        assert [t["hash"] for t in again] == [t["hash"] for t in trades]
        assert_pool_as_on_chain(net, market, pair, pepe, row, 2_800.0)
    finally:
        net.close()
        node.stop()


def test_a_chain_with_no_swap_yet_materialises(tmp_path):
    """A chain followed from before its first swap (liquidity only) materialises and serves
    its pair, with no trade."""
    node = start_node()
    net = Devnet(node.url)
    try:
        market = v2_market(net)
        pair, _ = market.pool("Pepe", "PEPE", 10 * E18, 10_000 * E18)
        ingested(tmp_path, node.url, market.venues_file())
        with edge_process(tmp_path) as base:
            row = httpx.get(f"{base}/api/v1/chains/devnet/pairs/{pair}", timeout=30).json()
            assert row["txn"]["h24"]["buys"] == row["txn"]["h24"]["sells"] == 0
            # 10 WETH at 3,000 USD, both sides.
            assert row["liquidity_usd"] == pytest.approx(2 * 10 * 3_000, rel=1e-9)
    finally:
        net.close()
        node.stop()
