"""Uniswap V2 as its own npm packages ship it (`@uniswap/v2-core`'s factory and pair,
`@uniswap/v2-periphery`'s Router02 and WETH9) on anvil: the router's liquidity and swaps
ingested, materialised and served, the figures worked out by hand from the pool's rule."""

from datetime import UTC, datetime

import httpx
import polars as pl
import pytest

from core.vocabulary import SNIPE_BLOCKS
from core.wire import iso_text
from sources.evm.devnet import TOKEN_ARGS, uniswap_v2
from sources.lake import LakeWriter
from tests.conftest import edge_process
from tests.e2e.conftest import devnet_on, ingested
from tests.sources.evm.test_ingest import isqrt, out_for

pytestmark = pytest.mark.cost(seconds=20)

E18 = 10**18
# Uniswap V2 keeps this much of the first liquidity in the pair for ever.
MINIMUM_LIQUIDITY = 1_000


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    home = tmp_path_factory.mktemp("uniswap-v2-home")
    with devnet_on() as net:
        v2 = uniswap_v2(net)
        pepe = net.deploy("Token", TOKEN_ARGS, ["Pepe", "PEPE", 18, 10**9 * E18])
        v2.wrap(0, 1_000 * E18)
        pair = v2.pool(pepe, 1_000_000 * E18, 1_000 * E18)
        v2.wrap(1, 10 * E18)
        net.send(pepe, "approve(address,uint256)", v2.router, 2**256 - 1, sender=1)
        buy = v2.swap([v2.weth, pepe], E18, 1)
        sell = v2.swap([pepe, v2.weth], 400 * E18, 1)
        ingested(home, net.rpc.url, v2.venues_file())
        reserves = net.view(pair, "getReserves()", ["uint112", "uint112", "uint32"])
        token0 = str(net.view(pair, "token0()", ["address"])[0]).lower()
        with edge_process(home) as base:
            yield {"home": home, "base": base + "/api/v1", "pair": pair, "pepe": pepe,
                   "weth": v2.weth, "buy": buy, "sell": sell, "trader": net.accounts[1],
                   "owner": net.accounts[0], "reserves": reserves, "token0": token0}


def test_the_routers_swaps_are_the_pairs_trades_priced_by_hand(chain):
    r_weth, r_pepe = 1_000 * E18, 1_000_000 * E18
    bought = out_for(E18, r_weth, r_pepe)
    r_weth, r_pepe = r_weth + E18, r_pepe - bought
    paid = out_for(400 * E18, r_pepe, r_weth)
    r_weth, r_pepe = r_weth - paid, r_pepe + 400 * E18
    # The chain's own reserves are the ones worked out.
    on_chain = dict(zip(("weth", "pepe") if chain["token0"] == chain["weth"]
                        else ("pepe", "weth"), chain["reserves"][:2], strict=True))
    assert (on_chain["weth"], on_chain["pepe"]) == (r_weth, r_pepe)

    answer = httpx.get(f"{chain['base']}/chains/devnet/pairs/{chain['pair']}/trades",
                       timeout=30)
    trades = [t for t in answer.json()["items"] if t["tx_type"] in ("buy", "sell")]
    assert [(t["tx_type"], t["hash"], t["maker_address"]) for t in trades] == [
        ("sell", chain["sell"]["transactionHash"], chain["trader"]),
        ("buy", chain["buy"]["transactionHash"], chain["trader"])]
    row = httpx.get(f"{chain['base']}/chains/devnet/pairs/{chain['pair']}", timeout=30).json()
    m5 = row["txn"]["m5"]
    assert m5["buy_volume"] == pytest.approx(1.0 * 3_000, rel=1e-9)
    assert m5["sell_volume"] == pytest.approx(paid / E18 * 3_000, rel=1e-9)
    pepe = next(t for t in row["tokens"] if t["symbol"] == "PEPE")
    assert pepe["price_usd"] == pytest.approx(r_weth / r_pepe * 3_000, rel=1e-9)
    assert row["liquidity_usd"] == pytest.approx(2 * r_weth / E18 * 3_000, rel=1e-9)


def test_the_first_liquidity_is_the_owners_less_the_minimum(chain):
    events = LakeWriter(chain["home"] / "lake").read("liquidity_events").filter(
        pl.col("pair") == chain["pair"])
    assert events.select("kind", "owner").rows() == [("mint", chain["owner"])]
    assert int(events["liquidity"][0]) == isqrt(1_000_000 * E18 * 1_000 * E18) \
        - MINIMUM_LIQUIDITY


def test_taxes_are_measured_from_the_swaps_and_verification_unknown(chain):
    # A real lake declares no tax and reads no source code: verification unknown, not false;
    # the taxes served are what its swaps measured.
    lake = LakeWriter(chain["home"] / "lake")
    tokens = lake.read("tokens").select("contract_verified", "buy_tax", "sell_tax")
    assert tokens.null_count().row(0) == (tokens.height,) * 3
    row = httpx.get(f"{chain['base']}/chains/devnet/pairs/{chain['pair']}", timeout=30).json()
    # PEPE takes no fee: its one buy and one sell each measured 0.
    at = {name: iso_text(datetime.fromtimestamp(int(lake.read("blocks").filter(
        pl.col("block_number") == int(chain[name]["blockNumber"], 16))["block_time"][0]
        .timestamp()), UTC)) for name in ("buy", "sell")}
    assert (row["safety"]["buy_tax"], row["safety"]["sell_tax"]) == (0.0, 0.0)
    assert row["safety"]["tax_measured"] == {"buy_swaps": 1, "buy_since": at["buy"],
                                             "sell_swaps": 1, "sell_since": at["sell"]}
    token = httpx.get(f"{chain['base']}/chains/devnet/tokens/{chain['pepe']}", timeout=30).json()
    assert token["taxes"] == {"buy_tax": 0.0, "sell_tax": 0.0,
                              "measured": row["safety"]["tax_measured"]}
    # Tested when met: a buy and a sell simulated on the node, through the pair, pass.
    assert (token["honeypot"]["result"], token["honeypot"]["buy_tax"],
            token["honeypot"]["sell_tax"], token["honeypot"]["failed_step"]) == (
        "pass", 0.0, 0.0, None)
    assert row["safety"]["is_honeypot"] is False


def test_the_cohorts_are_the_chains_own_buyers_and_holders(chain):
    # The trader bought once through the router and sold 400 PEPE back; the owner deployed
    # PEPE, put 1,000,000 of it in the pool and holds the rest.
    lake = LakeWriter(chain["home"] / "lake")
    launch = lake.read("pairs").filter(pl.col("address") == chain["pair"])["created_block"][0]
    bought = out_for(E18, 1_000 * E18, 1_000_000 * E18)
    trader_holds, owner_holds = (bought - 400 * E18) / E18, (10**9 - 1_000_000) * 1.0
    answer = httpx.get(f"{chain['base']}/chains/devnet/tokens/{chain['pepe']}/cohorts",
                       timeout=30)
    assert answer.status_code == 200, answer.text
    cohorts = {c["cohort"]: c for c in answer.json()["items"]}
    sniped = int(chain["buy"]["blockNumber"], 16) < launch + SNIPE_BLOCKS
    assert cohorts["sniper"]["wallets"] == int(sniped)
    # The trader: the first buyer, first seen at its first trade, a top holder.
    for name, held in (("early_buyer", trader_holds), ("fresh_wallet", trader_holds),
                       ("deployer", owner_holds), ("top_holder", owner_holds + trader_holds)):
        assert cohorts[name]["held"] == pytest.approx(held, rel=1e-12), name
        assert cohorts[name]["share_of_supply"] == pytest.approx(held / 10**9, rel=1e-12)
    assert [cohorts[n]["wallets"] for n in ("early_buyer", "deployer", "top_holder")] == [1, 1, 2]
    paid = out_for(400 * E18, 1_000_000 * E18 - bought, 1_001 * E18) / E18 * 3_000
    assert cohorts["early_buyer"]["net_flow_usd"]["h24"] == pytest.approx(3_000 - paid, rel=1e-9)
    traders = httpx.get(f"{chain['base']}/chains/devnet/tokens/{chain['pepe']}/traders",
                        params={"cohort": "early_buyer"}, timeout=30).json()["items"]
    assert [t["address"] for t in traders] == [chain["trader"]]
