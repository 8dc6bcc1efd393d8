"""What a wallet's own swaps say about it: round trips, two-sided flow, first-swap entries,
timing spread and peak capital. Classifiers read these figures, never who the simulator says
a wallet is."""

import polars as pl

from assets.fingerprints import distinct, first_rows, gathered, keyed, lookup
from assets.round_trips import POOL, round_trips

# Entering a pool among its first swaps is sniping.
SNIPE_SWAPS = 10
# A pool younger than this is a launch; market makers quote established pools.
ESTABLISHED_S = 7 * 86_400


def swap_traits(ledger: pl.DataFrame, pools: pl.DataFrame) -> pl.DataFrame:
    """Per wallet: immediate round trips (a buy whose very next swap in the pool is the same
    wallet selling), sniped entries, two-sided flow, the share of swaps in established pools,
    the distinct hours of day it traded in, and pools traded. Wallets and pools are grouped
    and found by fingerprint, their addresses taken from their first row."""
    swaps = ledger.filter(pl.col("side").is_in(["buy", "sell"])).with_columns(
        wallet_key=keyed("chain_id", "wallet"), pool_key=keyed(*POOL))
    legs = swaps.select(*POOL, maker="wallet_key", buy=pl.col("side") == "buy")
    known = pools.select("created_at", key=keyed(*POOL))
    pool = lookup(pl.col("pool_key"), distinct(known["key"], "pair_tokens"))
    marked = (swaps.select("chain_id", "wallet", "side", "ts", "wallet_key", "pool_key",
                           created_at=gathered(known["created_at"], pool))
              .with_columns(ordinal=pl.int_range(pl.len()).over("pool_key"),
                            round_trip=round_trips(legs) & legs["buy"],
                            established=(pl.col("ts") - pl.col("created_at").dt.epoch("s"))
                            >= ESTABLISHED_S))
    entries = (marked.filter(pl.col("side") == "buy")
               .group_by(keyed("wallet_key", "pool_key"))
               .agg(pl.col("wallet_key", "ordinal", "established").first())
               .group_by("wallet_key").agg(
                   entries=pl.len(),
                   sniped=((pl.col("ordinal") < SNIPE_SWAPS) & ~pl.col("established")).sum()))
    folded = marked.with_row_index("_row").group_by("wallet_key").agg(
        pl.col("_row").first(),
        swaps=pl.len(), buys=(pl.col("side") == "buy").sum(),
        sells=(pl.col("side") == "sell").sum(), round_trips=pl.col("round_trip").sum(),
        established=pl.col("established").sum(), pools=pl.col("pool_key").n_unique(),
        hours=(pl.col("ts") // 3600 % 24).n_unique(),
        first_swap=pl.col("ts").min(), last_swap=pl.col("ts").max())
    return (first_rows(marked, folded, ("chain_id", "wallet"))
            .join(entries, on="wallet_key", how="left")
            .with_columns(pl.col("entries", "sniped").fill_null(0))
            .drop("wallet_key"))


def peak_capital(ledger: pl.DataFrame) -> pl.DataFrame:
    """Per wallet: the most cost basis it ever had open at once, across all its tokens (the
    running sum of every row's change to its position's open cost, per wallet fingerprint)."""
    folded = (ledger.lazy().with_row_index("_row")
              .select("_row", "cost_change", wallet_key=keyed("chain_id", "wallet"))
              .with_columns(open=pl.col("cost_change").cum_sum().over("wallet_key"))
              .group_by("wallet_key").agg(pl.col("_row").first(),
                                          deployed_usd=pl.col("open").max().clip(0.0))
              .drop("wallet_key").collect())
    return first_rows(ledger, folded, ("chain_id", "wallet"))
