"""Positions (one row per wallet and token it swapped, every round averaged together) and rounds
(one row per cycle from the first unit in to the last unit out), from the accounted ledger."""

import polars as pl

from assets.fingerprints import first_rows, keyed
from assets.wallets.ledger import POSITION
from checks.schemas.lake import TERMINAL_TOKEN_STATUSES

BUY, SELL = pl.col("side") == "buy", pl.col("side") == "sell"
SWAP = BUY | SELL
PRICED = pl.col("notional_usd").is_not_null()
# What positions and rounds read of the ledger: never its hashes, pairs or fees. A position
# is grouped by its fingerprint (see assets/fingerprints.py), its strings taken from its rows.
ACCOUNTS = ("position", *POSITION, "round", "ts", "side", "qty", "notional_usd", "cost_in_usd",
            "realized_usd", "cost_closed_usd", "held", "cost", "incomplete", "opens", "closes",
            "round_opened_at")


def _contributions() -> dict[str, pl.Expr]:
    """What each ledger row adds to its group's flows, as plain columns: a group then sums
    them rather than filtering its rows once per figure."""
    def when(kept: pl.Expr, column: str) -> pl.Expr:
        return pl.when(kept).then(pl.col(column)).otherwise(0.0)

    return {
        "buys": BUY, "sells": SELL, "transfers_in": pl.col("side") == "transfer_in",
        "transfers_out": pl.col("side") == "transfer_out",
        "bought_qty": when(BUY, "qty"), "sold_qty": when(SELL, "qty"),
        "bought_usd": when(BUY, "notional_usd"), "sold_usd": when(SELL, "notional_usd"),
        "_priced_in": when(BUY & PRICED, "qty"), "_priced_out": when(SELL & PRICED, "qty"),
        "_priced_swaps": SWAP & PRICED,
    }


def _flows() -> list[pl.Expr]:
    """What a set of ledger rows adds up to: counts, quantities, money and accounting."""
    return [
        pl.col(*_contributions(), "cost_in_usd", "realized_usd", "cost_closed_usd").sum(),
        pl.col("held").last(), pl.col("cost").last().alias("open_cost_usd"),
        pl.col("incomplete").any().alias("basis_is_incomplete"),
    ]


def _prices() -> dict[str, pl.Expr]:
    def ratio(usd: str, qty: str) -> pl.Expr:
        return pl.when(pl.col(qty) > 0).then(pl.col(usd) / pl.col(qty))

    return {"avg_entry_price_usd": ratio("bought_usd", "_priced_in"),
            "avg_exit_price_usd": ratio("sold_usd", "_priced_out"),
            "realized_roi": pl.when(pl.col("cost_closed_usd") > 0)
            .then(pl.col("realized_usd") / pl.col("cost_closed_usd")).otherwise(0.0)}


def assemble_positions(ledger: pl.DataFrame, tokens: pl.DataFrame) -> pl.DataFrame:
    """Every token a wallet swapped, lifetime: flows, the open holding marked at the token's
    price (zero for a condemned token, whatever its score), realised, unrealised and total.

    A position is tracked when at least one of its swaps had a USD price; an untracked one
    carries no PNL. Tokens that only ever moved by transfer are no position."""
    marks = tokens.select("chain_id", token="address", token_symbol="symbol",
                          token_price_usd="price_usd", token_score="rating_score",
                          token_status="token_status")
    folded = (ledger.lazy().with_row_index("_row")
              .with_columns(**_contributions(), swapped_at=pl.when(SWAP).then("ts"))
              .group_by("position").agg(
                  pl.col("_row").first(), *_flows(), pl.col("opens").sum().alias("rounds"),
                  pl.col("swapped_at").min().alias("first_trade_at"),
                  pl.col("swapped_at").max().alias("last_trade_at"))
              .filter(pl.col("buys") + pl.col("sells") > 0).collect())
    return (first_rows(ledger, folded, POSITION)
        .join(marks, on=["chain_id", "token"], how="left")
        .with_columns(
            tracked=pl.col("_priced_swaps") > 0,
            condemned=pl.col("token_status").is_in(TERMINAL_TOKEN_STATUSES).fill_null(False),
            is_open=pl.col("held") > 0,
            token_score=pl.col("token_score").fill_null(0),
            token_status=pl.col("token_status").fill_null(1),
            **_prices())
        .with_columns(
            mark_usd=pl.when(pl.col("condemned")).then(0.0).otherwise("token_price_usd"))
        .with_columns(
            marked=~pl.col("is_open") | pl.col("mark_usd").is_not_null(),
            value_usd=pl.col("held") * pl.col("mark_usd").fill_null(0.0))
        .with_columns(
            realized_usd=pl.when("tracked").then("realized_usd").otherwise(0.0),
            unrealized_usd=pl.when(pl.col("tracked") & pl.col("is_open") & pl.col("marked"))
            .then(pl.col("value_usd") - pl.col("open_cost_usd")).otherwise(0.0))
        .with_columns(total_pnl_usd=pl.col("realized_usd") + pl.col("unrealized_usd"))
        .drop("position", "_priced_in", "_priced_out", "_priced_swaps", "token_price_usd"))


def assemble_rounds(ledger: pl.DataFrame, as_of_s: int) -> pl.DataFrame:
    """Every round of every position: opened and closed (null while open), flows, realised
    profit over the cost it closed, and how long it was held (to the watermark while open)."""
    # A round closes on one row at most: the one that took its holding to zero.
    folded = (ledger.lazy().with_row_index("_row")
              .with_columns(**_contributions(), closed_at=pl.when("closes").then("ts"),
                            closed_by_sell=SELL & pl.col("closes"))
              .group_by(keyed("position", "round")).agg(
                  pl.col("_row", "round").first(), *_flows(),
                  pl.col("opens").any().alias("_opened"),
                  pl.col("round_opened_at").first().alias("opened_at"),
                  pl.col("closed_at").max(), pl.col("closed_by_sell").any())
              .filter("_opened", pl.col("buys") + pl.col("sells") > 0).collect())
    return (first_rows(ledger, folded, POSITION)
        .with_columns(
            is_open=pl.col("closed_at").is_null(),
            hold_seconds=pl.coalesce("closed_at", pl.lit(as_of_s)) - pl.col("opened_at"),
            **_prices())
        .drop("key", "_priced_in", "_priced_out", "_priced_swaps", "_opened"))
