"""A pool that appears between two refreshes is in the second: on a simulated lake, and on
Uniswap V2 and V3 as their npm packages ship them, ingested from anvil. Every step of a run
reads the lake at the versions its own run pinned, so the chain record's counts agree with the
lake's (a step that ran before the pin read the lake where the previous run left it, and the
run's blocking check refused to publish)."""

import math
from datetime import timedelta

import httpx
import polars as pl
import pytest

from sources.evm.devnet import TOKEN_ARGS, Devnet, UniswapV2, UniswapV3, uniswap_v2, uniswap_v3
from sources.lake import LakeWriter
from tests.conftest import edge_process, run_cli
from tests.e2e.conftest import devnet_on

E18 = 10**18
Q96 = 2**96
FEE = 3_000

pytestmark = pytest.mark.stack(seconds=45)


def refreshed(home, *ingest: str) -> None:
    """Ingest (when given) and materialise; both must succeed."""
    for command in ([list(ingest)] if ingest else []) + [["materialize"]]:
        done = run_cli(command, home)
        assert done.returncode == 0, done.stderr[-3_000:]


def chain_record(home, slug: str) -> dict:
    with edge_process(home) as base:
        answer = httpx.get(f"{base}/api/v1/chains", timeout=30)
    assert answer.status_code == 200, answer.text
    return next(c for c in answer.json()["items"] if c["slug"] == slug)


def v2_pool(net: Devnet, v2, name: str, symbol: str) -> str:
    """A token/WETH pool of 1,000,000 tokens and 100 WETH, and a buy of 1 WETH on it."""
    token = net.deploy("Token", TOKEN_ARGS, [name, symbol, 18, 10**9 * E18])
    pair = v2.pool(token, 1_000_000 * E18, 100 * E18)
    v2.swap([v2.weth, token], E18, 0)
    return pair


def v3_pool(net: Devnet, v3, name: str, symbol: str) -> str:
    """A token/WETH pool at 0.001 WETH a token, one wide position, and a buy of 1 WETH."""
    token = net.deploy("Token", TOKEN_ARGS, [name, symbol, 18, 10**12 * E18])
    token0, token1 = sorted([token, v3.weth])
    price = 0.001 if token0 == token else 1_000.0
    pool = v3.pool(token0, token1, FEE, int(math.sqrt(price) * Q96))
    at = math.floor(math.log(price) / math.log(1.0001)) // 60 * 60
    amounts = {token: 100_000 * E18, v3.weth: 100 * E18}
    v3.mint(token0, token1, FEE, (at - 6_000, at + 6_000), amounts[token0], amounts[token1], 0)
    v3.swap(v3.weth, token, FEE, E18, 0)
    return pool


def both_families(net: Devnet) -> tuple[UniswapV2, UniswapV3, str]:
    """Uniswap V2 and V3 deployed side by side, each over its own WETH9, account 0 holding
    1,000 WETH of each and letting each router move it; and the venues file naming both."""
    v2, v3 = uniswap_v2(net), uniswap_v3(net)
    for market in (v2, v3):
        net.transact({"from": net.accounts[0], "to": market.weth, "value": hex(1_000 * E18),
                      "data": "0xd0e30db0"})  # deposit()
        net.send(market.weth, "approve(address,uint256)", market.router, 2**256 - 1)
    venues = (
        f'chain: {{slug: devnet, display_name: Devnet, explorer_url: "https://explorer.invalid",'
        f' native_token: "{v2.weth}"}}\n'
        f'venues:\n'
        f'  - {{name: "Uniswap V2", type: uniswap_v2, factory: "{v2.factory}",'
        f' router: "{v2.router}"}}\n'
        f'  - {{name: "Uniswap V3", type: uniswap_v3, position_manager: "{v3.positions}",'
        f' factory: "{v3.factory}", router: "{v3.router}"}}\n'
        f'quotes:\n'
        f'  - {{token: "{v2.weth}", chainlink: "{v2.aggregator}"}}\n'
        f'  - {{token: "{v3.weth}", chainlink: "{v3.aggregator}"}}\n')
    return v2, v3, venues


def test_pools_made_after_a_refresh_on_v2_and_v3_are_counted_by_the_next(tmp_path):
    # Both families on one chain, so that one node, ingest and pair of refreshes serve both.
    with devnet_on() as net:
        v2, v3, text = both_families(net)
        first = [v2_pool(net, v2, "Pepe", "PEPE"), v3_pool(net, v3, "Pepe3", "PEPE3")]
        venues = tmp_path / "venues.yaml"
        venues.write_text(text)
        ingest = ("ingest", "evm", "--rpc", net.rpc.url, "--venues", str(venues),
                  "--confirmations", "0")
        refreshed(tmp_path, *ingest)
        before = chain_record(tmp_path, "devnet")
        assert (before["pairs"], before["txns_24h"]) == (2, 2)

        second = [v2_pool(net, v2, "Wojak", "WOJAK"), v3_pool(net, v3, "Wojak3", "WOJAK3")]
        refreshed(tmp_path, *ingest)
        after = chain_record(tmp_path, "devnet")
        # Two more pools, and their one buy each.
        assert (after["pairs"], after["txns_24h"]) == (4, 4)
        with edge_process(tmp_path) as base:
            for pool in first + second:
                row = httpx.get(f"{base}/api/v1/chains/devnet/pairs/{pool}", timeout=30)
                assert row.status_code == 200, row.text


def test_a_pool_added_to_a_simulated_lake_is_counted_by_the_next_refresh(tmp_path):
    refreshed(tmp_path, "simulate", "--chains", "4", "--days", "1", "--swaps", "3000",
              "--seed", "11")
    lake = LakeWriter(tmp_path / "lake")
    slug, chain_id = lake.read("chains").sort("chain_id").select("slug", "chain_id").row(0)
    counted = chain_record(tmp_path, slug)["pairs"]

    # A pool made at the lake's watermark: a copy of one of the chain's pools at a new
    # address, committed and marked as the simulator marks its batches.
    with lake.writing():
        mark = lake.progress()
        assert mark is not None
        pairs = lake.read("pairs")
        made = pairs.filter(pl.col("chain_id") == chain_id).head(1).with_columns(
            address=pl.lit("0x" + "ab" * 20), created_at=pl.lit(mark.watermark),
            created_block=pl.col("created_block") + 1)
        lake.replace("pairs", pl.concat([pairs.filter(pl.col("chain_id") == chain_id), made]),
                     f"chain_id = {chain_id}")
        lake.mark(mark.watermark + timedelta(seconds=1), mark.writer, mark.step + 1, mark.meta)
    refreshed(tmp_path)
    assert chain_record(tmp_path, slug)["pairs"] == counted + 1
