"""A chain's frontier: the highest block of it a reader holds; its rows past it are new."""

from collections.abc import Mapping

import polars as pl


def reached(frontier: Mapping[int, int], chain: str = "chain_id") -> pl.Expr:
    """Each row's chain's frontier block, by the chain id in column `chain` (-1 for a chain
    `frontier` does not name: every block of it is past)."""
    return pl.col(chain).replace_strict(frontier, default=-1, return_dtype=pl.Int64)
