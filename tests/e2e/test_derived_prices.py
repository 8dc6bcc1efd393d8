"""Prices derived through pools, worked out by hand: DOGE trades only against PEPE, and PEPE
only against WETH, which a Chainlink aggregator prices. A DOGE/PEPE swap's USD volume is its
PEPE amount times PEPE's price through PEPE/WETH at that block, times ETH/USD then; SHIB's only
pool is under the liquidity floor, so SHIB never gets a price and CAT/SHIB stays unpriced."""

import httpx
import polars as pl
import pytest

from sources.evm.derived import derived_feed_id
from sources.evm.devnet import V2Market
from sources.lake import LakeWriter
from tests.conftest import edge_process
from tests.e2e.conftest import devnet_on, ingested, pepe_market
from tests.sources.evm.test_ingest import out_for

pytestmark = pytest.mark.cost(seconds=20)

E18 = 10**18
E8 = 10**8


def pool_of(market: V2Market, base: str, quote: str, base_amount: int,
            quote_amount: int) -> str:
    """The base/quote pool with account 0's liquidity."""
    pair = market.pair(base, quote)
    market.approve(0, base, quote)
    amounts = (base_amount, quote_amount) if base < quote else (quote_amount, base_amount)
    market.add_liquidity(pair, *amounts)
    return pair


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    home = tmp_path_factory.mktemp("derived-home")
    with devnet_on() as net:
        # PEPE/WETH holds 1,000 WETH and 1,000,000 PEPE: PEPE is 3 USD at ETH 3,000.
        market, pepe, pepe_weth = pepe_market(net, 10 * E18)
        doge = market.token("Doge", "DOGE", 10**9 * E18)
        shib = market.token("Shiba", "SHIB", 10**12 * E18)
        cat = market.token("Cat", "CAT", 10**9 * E18)
        # DOGE/PEPE: 100,000 PEPE (600,000 USD of liquidity) against 50,000 DOGE.
        doge_pepe = pool_of(market, doge, pepe, 50_000 * E18, 100_000 * E18)
        # SHIB/PEPE: 1,000 PEPE, 6,000 USD of liquidity, under the 10,000 USD floor.
        shib_pepe = pool_of(market, shib, pepe, 10**6 * E18, 1_000 * E18)
        cat_shib = pool_of(market, cat, shib, 1_000 * E18, 10**6 * E18)
        market.transfer(pepe, 1, 10_000 * E18)
        market.approve(1, pepe, doge)
        # A WETH buy of PEPE moves PEPE's price; then two DOGE buys with PEPE, the second
        # after ETH/USD moved to 3,100.
        market.swap(pepe_weth, market.quote, 10 * E18, 1)
        market.swap(doge_pepe, pepe, 1_000 * E18, 1)
        # Each a minute later: an answer in force from its second on.
        net.rpc.call("evm_increaseTime", 60)
        market.answer(3_100 * E8)
        net.rpc.call("evm_increaseTime", 60)
        market.swap(doge_pepe, pepe, 2_000 * E18, 1)
        ingested(home, net.rpc.url, market.venues_file())
        with edge_process(home) as base:
            yield {"home": home, "base": base + "/api/v1", "tokens": {
                "pepe": pepe, "doge": doge, "shib": shib, "cat": cat},
                "pairs": {"doge_pepe": doge_pepe, "shib_pepe": shib_pepe,
                          "cat_shib": cat_shib}}


def by_hand() -> dict[str, float]:
    """PEPE's price after the WETH buy, the two DOGE buys' volumes and DOGE's last price."""
    r_weth, r_pepe = 1_000 * E18, 1_000_000 * E18
    bought = out_for(10 * E18, r_weth, r_pepe)
    r_weth, r_pepe = r_weth + 10 * E18, r_pepe - bought
    pepe_3000, pepe_3100 = r_weth / r_pepe * 3_000, r_weth / r_pepe * 3_100
    d_pepe, d_doge = 100_000 * E18, 50_000 * E18
    for amount in (1_000 * E18, 2_000 * E18):
        out = out_for(amount, d_pepe, d_doge)
        d_pepe, d_doge = d_pepe + amount, d_doge - out
    return {"pepe": pepe_3100, "buys": 1_000 * pepe_3000 + 2_000 * pepe_3100,
            "doge": d_pepe / d_doge * pepe_3100}


def get(chain, path: str) -> dict:
    answer = httpx.get(chain["base"] + path, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_token_two_hops_from_a_feed_is_priced_through_both(chain):
    expected = by_hand()
    row = get(chain, f"/chains/devnet/pairs/{chain['pairs']['doge_pepe']}")
    m5 = row["txn"]["m5"]
    assert (m5["buys"], m5["sells"]) == (2, 0)
    assert m5["buy_volume"] == pytest.approx(expected["buys"], rel=1e-9)
    sides = {t["symbol"]: t for t in row["tokens"]}
    assert sides["DOGE"]["price_usd"] == pytest.approx(expected["doge"], rel=1e-9)
    assert sides["PEPE"]["price_usd"] == pytest.approx(expected["pepe"], rel=1e-9)


def test_a_pool_under_the_floor_never_sets_a_price(chain):
    lake = LakeWriter(chain["home"] / "lake")
    feeds = lake.read("oracle_feeds").filter(pl.col("source") == "derived")
    # PEPE is the only bridge priced: DOGE is no pool's quote, SHIB's one pool is too thin.
    assert feeds["feed_id"].to_list() == [derived_feed_id(31337, chain["tokens"]["pepe"])]
    shib = derived_feed_id(31337, chain["tokens"]["shib"])
    assert lake.read("oracle_updates").filter(pl.col("feed_id") == shib).is_empty()
    row = get(chain, f"/chains/devnet/pairs/{chain['pairs']['cat_shib']}")
    assert not row["liquidity_usd"]
