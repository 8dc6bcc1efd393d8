"""A token's last honeypot test (docs/market.md, "Honeypot test"), from the lake's
`honeypot_tests`."""

import polars as pl


def last_honeypot_tests(tests: pl.LazyFrame) -> pl.LazyFrame:
    """Per token (`chain_id`, `address`): its last honeypot test (`honeypot_*`)."""
    return (tests.sort("chain_id", "token", "block_number")
            .group_by("chain_id", "token").agg(pl.all().last())
            .select("chain_id", address="token", honeypot_result="result",
                    honeypot_tested_at="block_time", honeypot_buy_tax="buy_tax",
                    honeypot_sell_tax="sell_tax", honeypot_failed_step="failed_step"))
