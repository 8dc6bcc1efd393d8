"""64-bit fingerprints of addresses: what the folds over every swap group, look up and compare on
instead of the address strings, which cost several times more to hash into a table each time.
Two different values share a fingerprint with odds of about 1 in 10^8 among a million of them;
lookups that must be exact check that their table's fingerprints are distinct."""

import hashlib
import inspect
from functools import reduce
from types import ModuleType

import numba
import numpy as np
import polars as pl


def keyed(*columns: str | pl.Expr) -> pl.Expr:
    """One fingerprint of several columns, in order (each position hashes with its own seed, so
    a wallet paying and receiving in one swap does not cancel out); the same values in the same
    order give the same fingerprint whatever their columns are named."""
    parts = [(pl.col(c) if isinstance(c, str) else c).hash(position)
             for position, c in enumerate(columns)]
    return reduce(lambda a, b: a.xor(b), parts).alias("key")


def recipe(*modules: ModuleType) -> str:
    """A name for the code in `modules`: what something is made or checked with, so that a
    change to the code makes it again rather than keep what the old code made."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:16]


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
    # each chunk once, at random positions they cost several times more. Folds that number
    # their groups in first-row order give them in order already, and are not copied again.
    if not folded["_row"].is_sorted():
        folded = folded.sort("_row")
    return folded.with_columns(frame.select(pl.col(*columns).gather(folded["_row"]))).drop("_row")


# Fibonacci hashing: a fingerprint times 2^64 / golden ratio, its top bits a table slot.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def numbered(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Each fingerprint's number from 0, in the order of first appearance, and how many there
    are: an open-addressed table that doubles when half full, a slot's fingerprint and number
    (plus one; 0 is empty) side by side so that a probe reads one cache line."""
    bits = 16
    mask = (1 << bits) - 1
    slots = np.zeros((1 << bits, 2), np.uint64)
    out, seen = np.empty(len(keys), np.int64), 0
    for i in range(len(keys)):
        key = keys[i]
        j = np.int64((key * _SPREAD) >> np.uint64(64 - bits))
        while slots[j, 1] != 0 and slots[j, 0] != key:
            j = (j + 1) & mask
        if slots[j, 1] != 0:
            out[i] = np.int64(slots[j, 1]) - 1
            continue
        seen += 1
        slots[j, 0], slots[j, 1], out[i] = key, np.uint64(seen), seen - 1
        if 2 * seen > mask:
            bits += 1
            mask = (1 << bits) - 1
            old = slots
            slots = np.zeros((1 << bits, 2), np.uint64)
            for k in range(len(old)):
                if old[k, 1] != 0:
                    j = np.int64((old[k, 0] * _SPREAD) >> np.uint64(64 - bits))
                    while slots[j, 1] != 0:
                        j = (j + 1) & mask
                    slots[j, 0], slots[j, 1] = old[k, 0], old[k, 1]
    return out, seen


@numba.njit(cache=True, nogil=True)
def first_indices(number, count):
    """Each number's first index, for numbers given from 0 in the order they first appear (as
    `numbered` gives them)."""
    first = np.empty(count, np.int64)
    seen = 0
    for i in range(len(number)):
        if number[i] == seen:
            first[seen] = i
            seen += 1
    return first
