"""The wire's text forms of figures the products and the edge's live rows both write: instants
in ISO 8601, a token's numeric status and a pair's status."""

from datetime import UTC, datetime

import polars as pl

from core.vocabulary import TERMINAL_TOKEN_STATUSES

ISO = "%Y-%m-%dT%H:%M:%S%.3fZ"


def status_text(column: str) -> pl.Expr:
    """A token's numeric status as the wire's text: `active`, `unresolved`, or the terminal
    number itself (`999`, `1000`)."""
    code = pl.col(column)
    return (pl.when(code == 0).then(pl.lit("active")).when(code == 1).then(pl.lit("unresolved"))
            .otherwise(code.cast(pl.String)))


def is_terminal(column: str) -> pl.Expr:
    """Whether a numeric token status is terminal (999 or 1000)."""
    return pl.col(column).is_in(TERMINAL_TOKEN_STATUSES)


def iso(column: str | pl.Expr) -> pl.Expr:
    """A UTC timestamp as the wire's ISO 8601 text (milliseconds, Z)."""
    expr = pl.col(column) if isinstance(column, str) else column
    return expr.dt.strftime(ISO)


def iso_text(instant: datetime | int) -> str:
    """An instant (or unix seconds) as the wire's ISO 8601 text, as `iso` writes it."""
    at = datetime.fromtimestamp(instant, UTC) if isinstance(instant, int) else instant
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def pair_status(unresolved: pl.Expr, rugged: pl.Expr, txns_h24: pl.Expr) -> pl.Expr:
    """A pair's status (spec 2.3): `unresolved` when it cannot be priced, `rugged`, else
    `active` with a swap in the last 24 hours and `inactive` without."""
    return (pl.when(unresolved).then(pl.lit("unresolved"))
            .when(rugged).then(pl.lit("rugged"))
            .when(txns_h24 > 0).then(pl.lit("active")).otherwise(pl.lit("inactive")))
