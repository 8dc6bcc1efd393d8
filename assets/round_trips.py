"""Immediate round trips: a buy that the same wallet sells back in the pool's very next swap.
Swaps are only gathered by position: the lake's order within a pool gives each swap's next one,
and wallets are compared by their 64-bit fingerprints (see assets/fingerprints.py), so no
address column is shifted or sorted."""

import polars as pl

POOL = ["chain_id", "pair"]


def round_trips(swaps: pl.DataFrame, *within: str) -> pl.Series:
    """Per swap (in the lake's order), whether it is a leg of an immediate round trip: a buy
    that the same wallet sells back in the pool's very next swap (next among the swaps sharing
    the columns `within`, such as a board period). `maker` is the wallet's fingerprint."""
    following = (swaps.select(*POOL, *within).with_row_index()
                 .select(pl.col("index").shift(-1).over(*POOL, *within)).to_series())
    buy, maker = swaps["buy"], swaps["maker"]
    at = (buy & ~buy.gather(following).fill_null(True)
          & (maker == maker.gather(following)).fill_null(False)).arg_true()
    legs = pl.concat([at, following.gather(at)])
    return pl.zeros(swaps.height, pl.Boolean, eager=True).alias("wash").scatter(legs, True)
