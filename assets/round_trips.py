"""Immediate round trips: a buy that the same wallet sells back in the pool's very next swap.
Swaps are only gathered by position: the lake's order within a pool gives each swap's next one,
and wallets are compared by hash before the few candidates are compared in full, so no address
column is shifted or sorted."""

import polars as pl

POOL = ["chain_id", "pair"]


def round_trips(swaps: pl.DataFrame, *within: str) -> pl.Series:
    """Per swap (in the lake's order), whether it is a leg of an immediate round trip: a buy
    that the same wallet sells back in the pool's very next swap (next among the swaps sharing
    the columns `within`, such as a board period). The maker is an address or already a
    fingerprint (the legs' `maker_key`)."""
    following = (swaps.select(*POOL, *within).with_row_index()
                 .select(pl.col("index").shift(-1).over(*POOL, *within)).to_series())
    buy, maker = swaps["buy"], swaps["maker"]
    fingerprint = maker.hash() if maker.dtype == pl.String else maker
    candidates = (buy & ~buy.gather(following).fill_null(True)
                  & (fingerprint == fingerprint.gather(following)).fill_null(False))
    at = candidates.arg_true()
    sold_back = following.gather(at)
    confirmed = maker.gather(at) == maker.gather(sold_back)
    legs = pl.concat([at.filter(confirmed), sold_back.filter(confirmed)])
    return pl.zeros(swaps.height, pl.Boolean, eager=True).alias("wash").scatter(legs, True)
