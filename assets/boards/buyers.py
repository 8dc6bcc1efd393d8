"""Distinct buyers per board row: a wallet buying on two of a row's pools counts once, and
once on its chain's row. Wallets and pools are told apart by 64-bit address fingerprints, so
no address string is hashed twice or joined on; two addresses sharing a fingerprint (odds
about 1 in 10^8 for a board of a million buyers) would count once."""

import polars as pl

from assets.round_trips import POOL
from core.fingerprints import keyed


def row_buyers(legs: pl.LazyFrame, pairs: pl.LazyFrame, inside: pl.Expr,
               *per: pl.Expr) -> pl.DataFrame:
    """Distinct wallets that bought in the legs `inside` selects, per protocol row (scope
    `protocols`, `row_key`) and per chain (scope `chains`, `row_key` null); and per each
    (named) expression of `per`, such as a leg's season."""
    rows = pairs.select("row_key", pool=keyed(*POOL))
    buys = (legs.filter(inside, pl.col("side") == "buy")
            .select("chain_id", *per, pool=keyed(*POOL), wallet="maker_key")
            .join(rows, on="pool"))
    keys = [e.meta.output_name() for e in per]
    wallets = pl.col("wallet").n_unique().cast(pl.Int64)
    # Collected together: the buys are read and joined once for both scopes.
    protocols, chains = pl.collect_all([
        buys.drop_nulls("row_key").group_by("chain_id", *keys, "row_key").agg(buyers=wallets)
        .with_columns(scope=pl.lit("protocols")),
        buys.group_by("chain_id", *keys).agg(buyers=wallets)
        .with_columns(scope=pl.lit("chains"), row_key=pl.lit(None, pl.String))])
    return pl.concat([protocols, chains.select(protocols.columns)]).sort(
        "scope", "chain_id", *keys, "row_key", nulls_last=True)
