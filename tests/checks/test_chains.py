import polars as pl
import pytest

from checks.outcome import validate
from checks.schemas.chains import ChainRecord

GOOD = {
    "slug": "ethereum", "display_name": "Ethereum", "native_address_format": "evm",
    "explorer_url": "https://etherscan.io", "chain_id": 1, "latest_block": 100, "head_block": 102,
    "block_lag_seconds": 24, "pairs": 10, "txns_24h": 50, "new_pairs_24h": 2,
    "new_pairs_24h_total": 3, "scams_total": 3, "scams_on_pool": 1, "scams_inherited": 2,
    "scams_24h": 1, "deployers_total": 5, "new_deployers_24h": 1, "deployer_abusers": 1,
    "syncing": True, "metrics_stale": False, "protocols": ["Flaunch", "Uniswap V2"],
    "dex_names": ["Uniswap V2"], "liquidity_usd": 1000.0, "volume_24h_usd": 10.0,
    "min_liquidity_usd": 100.0, "quality_liquidity_usd": 900.0,
    "gainer_pair_address": "0xa", "gainer_ticker": "A/WETH", "gainer_value": 12.0,
    "loser_pair_address": "0xb", "loser_ticker": "B/WETH", "loser_value": -3.0,
}


def record(**changes) -> pl.DataFrame:
    return pl.DataFrame([{**GOOD, **changes}])


def test_a_consistent_record_passes():
    assert validate("chain_records", ChainRecord, record()).passed


@pytest.mark.parametrize(("changes", "rule"), [
    ({"head_block": 99}, "head_at_or_above_latest_block"),
    ({"scams_total": 4}, "scams_split_into_on_pool_and_inherited"),
    ({"scams_24h": 4, "scams_total": 3}, "recent_counts_within_totals"),
    ({"new_pairs_24h": 4}, "recent_counts_within_totals"),
    ({"new_pairs_24h_total": 11, "new_pairs_24h": 2}, "recent_counts_within_totals"),
    ({"deployer_abusers": 6}, "recent_counts_within_totals"),
    ({"quality_liquidity_usd": 1001.0}, "quality_liquidity_within_liquidity"),
    ({"syncing": False, "metrics_stale": False}, "a_chain_not_syncing_is_stale"),
    ({"dex_names": ["SushiSwap"]}, "dex_names_are_protocols"),
    ({"gainer_value": -5.0}, "gainer_not_below_loser"),
    ({"block_lag_seconds": -1}, "greater_than_or_equal_to(0)"),
    ({"native_address_format": "bech32"}, "isin"),
])
def test_each_broken_rule_fails_by_name(changes, rule):
    outcome = validate("chain_records", ChainRecord, record(**changes))
    assert not outcome.passed
    assert any(rule in str(check) for check in outcome.failures["check"].to_list())
