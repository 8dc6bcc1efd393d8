"""64-bit fingerprints of addresses: what the folds over every swap group, look up and compare on
instead of the address strings, which cost several times more to hash into a table each time.
Two different values share a fingerprint with odds of about 1 in 10^8 among a million of them;
lookups that must be exact check that their table's fingerprints are distinct."""

from functools import reduce

import polars as pl


def keyed(*columns: str | pl.Expr) -> pl.Expr:
    """One fingerprint of several columns, in order (each position hashes with its own seed, so
    a wallet paying and receiving in one swap does not cancel out); the same values in the same
    order give the same fingerprint whatever their columns are named."""
    parts = [(pl.col(c) if isinstance(c, str) else c).hash(position)
             for position, c in enumerate(columns)]
    return reduce(lambda a, b: a.xor(b), parts).alias("key")


def lookup(key: pl.Expr, keys: pl.Series) -> pl.Expr:
    """Each row's position in a table whose rows have fingerprints `keys` (null when absent)."""
    return key.replace_strict(keys, pl.int_range(len(keys), eager=True), default=None)


def gathered(table: pl.Series, position: str | pl.Expr) -> pl.Expr:
    """A column of a small table at each row's position in it (from `lookup`), named as the
    table's column."""
    at = pl.col(position) if isinstance(position, str) else position
    return pl.lit(table).gather(at).alias(table.name)


def distinct(keys: pl.Series, table: str) -> pl.Series:
    """`keys` when no two rows of `table` share one; a lookup through them is then exact."""
    if keys.is_duplicated().any():
        raise ValueError(f"two rows of {table} share a 64-bit fingerprint")
    return keys


def first_rows(frame: pl.DataFrame, folded: pl.DataFrame, columns: tuple[str, ...]) -> pl.DataFrame:
    """`folded`, a fold of `frame` that kept each group's first row number as `_row`, with these
    columns of that row: gathered for the groups once, not carried through the fold, where
    address strings cost twice what the fold itself does. The groups come out in the order of
    their first rows, so two runs give the same rows in the same order."""
    # A frame read from a file is in many chunks: strings gathered at positions in order read
    # each chunk once, at random positions they cost several times more.
    folded = folded.sort("_row")
    return folded.with_columns(frame.select(pl.col(*columns).gather(folded["_row"]))).drop("_row")
