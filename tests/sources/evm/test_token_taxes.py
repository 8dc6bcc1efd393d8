"""A token's taxes measured from its swaps on a real anvil node: a fee-on-transfer token of our
own traded through Uniswap V2's own Router02 (`@uniswap/v2-periphery`) and pair, its taxes
changed over time and its sells blocked, beside a token with no tax; the lake's measures and
the taxes served from them worked out from the contract's basis points."""

import polars as pl
import pytest
import yaml

from figures.taxes import token_taxes
from sources.evm.config import parse
from sources.evm.devnet import (
    TOKEN_ARGS,
    Devnet,
    DevnetError,
    UniswapV2,
    compiled,
    uniswap_v2,
)
from sources.evm.honeypot import PROBE_CODE
from sources.evm.ingest import Follower
from sources.lake import LakeWriter

E18 = 10**18


def taxed_market(net: Devnet) -> tuple[UniswapV2, str, str, dict[str, str]]:
    """Uniswap V2 with two tokens paired with WETH: TaxToken at 5 % on buys and 10 % on
    sells, and a plain token; account 1 holds WETH to trade."""
    uni = uniswap_v2(net)
    taxed = net.deploy("TaxToken", ["string", "string", "uint256"], ["Taxed", "TAX", 10**9 * E18])
    plain = net.deploy("Token", TOKEN_ARGS, ["Plain", "PLAIN", 18, 10**9 * E18])
    uni.wrap(0, 100 * E18)
    uni.wrap(1, 100 * E18)
    pools = {t: uni.pool(t, 10**6 * E18, 10 * E18) for t in (taxed, plain)}
    net.send(taxed, "setPool(address,bool)", pools[taxed], True)
    net.send(taxed, "setTaxes(uint256,uint256)", 500, 1_000)
    return uni, taxed, plain, pools


def test_taxes_changed_over_time_and_a_token_with_none(node, tmp_path):
    net = Devnet(node.url)
    try:
        uni, taxed, plain, _ = taxed_market(net)
        blocks = {}
        for _ in range(2):
            uni.trade(taxed, E18 // 10, True, 1)
        uni.trade(taxed, 1_000 * E18, False, 1)
        net.send(taxed, "setTaxes(uint256,uint256)", 300, 2_000)
        blocks["buy"] = int(uni.trade(taxed, E18 // 10, True, 1)["blockNumber"], 16)
        blocks["sell"] = int(uni.trade(taxed, 1_000 * E18, False, 1)["blockNumber"], 16)
        # Sells blocked: a sell reverts on chain, so no sell measures it; buys go on.
        net.send(taxed, "blockSells(bool)", True)
        with pytest.raises(DevnetError):
            uni.trade(taxed, 1_000 * E18, False, 1)
        uni.trade(taxed, E18 // 10, True, 1)
        uni.trade(plain, E18 // 10, True, 1)
        uni.trade(plain, 1_000 * E18, False, 1)

        lake = LakeWriter(tmp_path / "lake")
        follow(uni, lake)
        rows = lake.read("token_taxes").sort("token", "side", "block_number")
        # Per token and side, in chain order: each run of swaps paying one tax.
        runs = {taxed: [("buy", 0.05, 2), ("buy", 0.03, 2), ("sell", 0.1, 1), ("sell", 0.2, 1)],
                plain: [("buy", 0.0, 1), ("sell", 0.0, 1)]}
        assert rows.select("token", "side", "tax", "swaps").rows() == [
            (token, *run) for token in sorted(runs) for run in runs[token]]
        times = dict(lake.read("blocks").select("block_number", "block_time").iter_rows())
        served = {r["address"]: r for r in token_taxes(lake.scan("tokens"),
                                                        lake.scan("token_taxes"))
                  .collect().to_dicts()}
        # The taxes in force: the last set, from the first swap that paid them.
        assert served[taxed] == {
            "chain_id": 31337, "address": taxed,
            "buy_tax": 0.03, "buy_tax_swaps": 2, "buy_tax_since": times[blocks["buy"]],
            "sell_tax": 0.2, "sell_tax_swaps": 1, "sell_tax_since": times[blocks["sell"]]}
        assert (served[plain]["buy_tax"], served[plain]["buy_tax_swaps"],
                served[plain]["sell_tax"], served[plain]["sell_tax_swaps"]) == (0.0, 1, 0.0, 1)
        # WETH is a quote: not measured, and a real lake declares no tax for it.
        assert (served[uni.weth]["buy_tax"], served[uni.weth]["sell_tax"]) == (None, None)
    finally:
        net.close()


def follow(uni, lake: LakeWriter) -> None:
    Follower.open(uni.net.rpc, parse(yaml.safe_load(uni.venues_file())), lake,
                  confirmations=0).run()


def test_the_honeypot_test_when_met_as_it_trades_and_when_its_owner_changes(node, tmp_path):
    net = Devnet(node.url)
    try:
        uni, taxed, plain, pools = taxed_market(net)
        for token in (taxed, plain):
            uni.trade(token, E18 // 10, True, 1)
        lake = LakeWriter(tmp_path / "lake")
        follow(uni, lake)

        def tests() -> pl.DataFrame:
            return lake.read("honeypot_tests").sort("block_number", "token")

        def verdicts() -> dict[str, str]:
            return dict(lake.read("tokens").select("address", "honeypot_test").iter_rows())

        # Met: both tested through their WETH pools; the simulated buy and sell pay the
        # contract's 5 % and 10 %, the plain token nothing.
        met = {r["token"]: r for r in tests().to_dicts()}
        assert set(met) == {taxed, plain}
        assert (met[taxed]["result"], met[taxed]["pair"], met[taxed]["failed_step"]) == (
            "pass", pools[taxed], None)
        assert met[taxed]["buy_tax"] == pytest.approx(0.05, abs=1e-9)
        assert met[taxed]["sell_tax"] == pytest.approx(0.10, abs=1e-9)
        assert (met[plain]["result"], met[plain]["buy_tax"], met[plain]["sell_tax"]) == (
            "pass", 0.0, 0.0)
        assert (verdicts()[taxed], verdicts()[plain]) == ("pass", "pass")

        # Sells blocked, an hour on: nothing changed that the chain says, not due: no test.
        net.send(taxed, "blockSells(bool)", True)
        net.rpc.call("evm_increaseTime", 3_600)
        uni.trade(taxed, E18 // 10, True, 1)
        follow(uni, lake)
        assert tests().height == 2

        # Six hours after its test and trading: tested again, and its sell's transfer fails.
        net.rpc.call("evm_increaseTime", 6 * 3_600)
        uni.trade(taxed, E18 // 10, True, 1)
        follow(uni, lake)
        again = tests().row(-1, named=True)
        assert (again["token"], again["result"], again["failed_step"], again["sell_tax"]) == (
            taxed, "fail", "sell transfer", None)
        assert again["buy_tax"] == pytest.approx(0.05, abs=1e-9)
        assert (verdicts()[taxed], verdicts()[plain]) == ("fail", "pass")

        # Its owner changed (and unblocked its sells first): tested at once, passing again.
        net.send(taxed, "blockSells(bool)", False)
        handed = net.send(taxed, "transferOwnership(address)", net.accounts[2])
        follow(uni, lake)
        last = tests().row(-1, named=True)
        assert (last["token"], last["result"]) == (taxed, "pass")
        assert last["block_number"] >= int(handed["blockNumber"], 16)
        assert tests().height == 4
        assert verdicts()[taxed] == "pass"
    finally:
        net.close()


def test_the_probe_shipped_is_the_probe_its_source_compiles_to():
    assert PROBE_CODE.read_text().strip() == compiled()["HoneypotProbe"]["bin"]
