"""A token's buy and sell taxes (docs/market.md, "Taxes"): measured from its swaps where the
lake's `token_taxes` hold measures, with how many swaps and since when; else what its `tokens`
row says (the simulator's world; null in a real lake: not measured yet)."""

import polars as pl

from core.vocabulary import SAME_TAX

SIDES = ("buy", "sell")


def token_taxes(tokens: pl.LazyFrame, measured: pl.LazyFrame) -> pl.LazyFrame:
    """Per token (`chain_id`, `address`): `{side}_tax`, `{side}_tax_swaps` and
    `{side}_tax_since` for each side. A side's tax is its last measure's; its swaps and since
    are those of the last run of measures agreeing with the one before (within SAME_TAX), so a
    tax changed shows from the first swap that paid it."""
    ordered = measured.sort("chain_id", "token", "side", "block_number", "log_index")
    side = ["chain_id", "token", "side"]
    changed = (pl.col("tax") - pl.col("tax").shift(1)).abs().over(side).fill_null(1.0) > SAME_TAX
    runs = ordered.with_columns(run=changed.cast(pl.Int64).cum_sum().over(side))
    last = (runs.filter(pl.col("run") == pl.col("run").max().over(side))
            .group_by(side).agg(tax=pl.col("tax").last(), swaps=pl.col("swaps").sum(),
                                since=pl.col("block_time").first()))
    out = tokens.select("chain_id", "address", declared_buy="buy_tax",
                        declared_sell="sell_tax")
    for name in SIDES:
        one = last.filter(pl.col("side") == name).select(
            "chain_id", address="token", **{f"{name}_measured": "tax",
                                            f"{name}_tax_swaps": "swaps",
                                            f"{name}_tax_since": "since"})
        out = out.join(one, on=["chain_id", "address"], how="left").with_columns(
            pl.coalesce(f"{name}_measured", f"declared_{name}").alias(f"{name}_tax"))
    return out.select("chain_id", "address",
                      *[f"{n}_tax{s}" for n in SIDES for s in ("", "_swaps", "_since")])
