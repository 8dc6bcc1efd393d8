"""The wallets' served records: what a published position and round keep, how the edge marks
a position at its token's price, and the JSON records of positions and rounds."""

import polars as pl

from core.fingerprints import distinct, gathered, keyed, lookup
from core.vocabulary import TERMINAL_TOKEN_STATUSES, wire_time

POSITION_KEY = ("chain_id", "wallet", "token")
# What a position shows of its token's price and standing: made at serve time (`marked`).
MARK_FIELDS = ("mark_usd", "value_usd", "unrealized_usd", "total_pnl_usd", "token_score",
               "token_status", "condemned")
POSITION_FIELDS = (
    "buys", "sells", "transfers_in", "transfers_out", "bought_qty", "sold_qty", "held",
    "bought_usd", "sold_usd", "cost_in_usd", "avg_entry_price_usd", "avg_exit_price_usd",
    "open_cost_usd", "mark_usd", "value_usd", "realized_usd", "cost_closed_usd",
    "unrealized_usd", "total_pnl_usd", "realized_roi", "rounds", "is_open", "tracked",
    "basis_is_incomplete", "token_score", "token_status", "condemned")
ROUND_FIELDS = (
    "round", "is_open", "buys", "sells", "transfers_in", "transfers_out", "bought_qty",
    "sold_qty", "held", "bought_usd", "sold_usd", "cost_in_usd", "avg_entry_price_usd",
    "avg_exit_price_usd", "open_cost_usd", "realized_usd", "cost_closed_usd", "realized_roi",
    "hold_seconds", "closed_by_sell", "basis_is_incomplete")


def marked(positions: pl.DataFrame, tokens: pl.DataFrame) -> pl.DataFrame:
    """Positions as their books make them (`book_positions`) with their tokens' symbol, score
    and status, the open holding marked at the token's price (zero for a condemned token,
    whatever its score), its value, unrealised and total (`tokens`: token rows, by chain and
    address). The books mark the wallet positions product so; the edge marks the published
    positions, which carry no price, at the snapshot's token rows."""
    marks = tokens.select(token_symbol="symbol", token_price_usd="price_usd",
                          token_score="rating_score", token_status="token_status",
                          key=keyed("chain_id", "address"))
    # A token's figures are looked up by fingerprint: a join would copy every position's row.
    token = lookup(keyed("chain_id", "token"), distinct(marks["key"], "token_rows"))
    return (positions.with_columns(_mark=token)
        .with_columns(gathered(marks[c], "_mark") for c in marks.columns[:-1])
        .with_columns(
            condemned=pl.col("token_status").is_in(TERMINAL_TOKEN_STATUSES).fill_null(False),
            token_score=pl.col("token_score").fill_null(0),
            token_status=pl.col("token_status").fill_null(1))
        .with_columns(
            mark_usd=pl.when(pl.col("condemned")).then(0.0).otherwise("token_price_usd"))
        .with_columns(
            marked=~pl.col("is_open") | pl.col("mark_usd").is_not_null(),
            value_usd=pl.col("held") * pl.col("mark_usd").fill_null(0.0))
        .with_columns(
            unrealized_usd=pl.when(pl.col("tracked") & pl.col("is_open") & pl.col("marked"))
            .then(pl.col("value_usd") - pl.col("open_cost_usd")).otherwise(0.0))
        .with_columns(total_pnl_usd=pl.col("realized_usd") + pl.col("unrealized_usd"))
        .drop("token_price_usd", "_mark"))


def position_items(positions: pl.DataFrame) -> pl.Series:
    """The position records of marked positions."""
    return _token_records(positions, POSITION_FIELDS, ("first_trade_at", "last_trade_at"))


def round_items(rounds: pl.DataFrame) -> pl.Series:
    """The round records of rounds with their hold."""
    return _token_records(rounds, ROUND_FIELDS, ("opened_at", "closed_at"))


def _token_records(rows: pl.DataFrame, fields: tuple[str, ...],
                   instants: tuple[str, str]) -> pl.Series:
    """JSON records of a wallet's rows of one token each: the token, `fields`, then `instants`
    as wire times."""
    return rows.select(pl.struct(
        pl.col("token").alias("token_address"), "token_symbol", *fields,
        *(wire_time(pl.col(at)).alias(at) for at in instants)).struct.json_encode()).to_series()


# What a published position keeps: its books, which change only when its wallet's ledger does.
POSITION_BOOKS = (*POSITION_KEY, *(f for f in POSITION_FIELDS if f not in MARK_FIELDS),
                  "first_trade_at", "last_trade_at")


ROUND_KEY = (*POSITION_KEY, "round")
# What a published round keeps (its hold is made at serve time: an open one's runs on).
ROUND_BOOKS = (*ROUND_KEY, "token_symbol", "opened_at", "closed_at",
               *(f for f in ROUND_FIELDS if f not in ("round", "hold_seconds")))
