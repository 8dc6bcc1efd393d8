"""What a wallet's own swaps say about it: round trips, two-sided flow, first-swap entries,
timing spread and peak capital. Classifiers read these figures, never who the simulator says
a wallet is."""

import numba
import numpy as np
import polars as pl

from assets.fingerprints import distinct, first_rows, gathered, keyed, lookup, numbered
from assets.round_trips import POOL

# Entering a pool among its first swaps is sniping.
SNIPE_SWAPS = 10
# A pool younger than this is a launch; market makers quote established pools.
ESTABLISHED_S = 7 * 86_400


def swap_traits(ledger: pl.DataFrame, pools: pl.DataFrame) -> pl.DataFrame:
    """Per wallet: immediate round trips (a buy whose very next swap in the pool is the same
    wallet selling), sniped entries, two-sided flow, the share of swaps in established pools,
    the distinct hours of day it traded in, and pools traded. Wallets, pools and a wallet's
    pools are numbered by fingerprint (see assets/fingerprints.py), their addresses taken from
    a wallet's first swap."""
    swaps = ledger.filter(pl.col("side").is_in(["buy", "sell"])).with_columns(
        wallet_key=keyed("chain_id", "wallet"), pool_key=keyed(*POOL))
    known = pools.select("created_at", key=keyed(*POOL))
    pool = lookup(pl.col("pool_key"), distinct(known["key"], "pair_tokens"))
    established = swaps.select(
        (pl.col("ts") - gathered(known["created_at"], pool).dt.epoch("s")) >= ESTABLISHED_S
    ).to_series().cast(pl.Int8).fill_null(-1).to_numpy()
    wallet, _ = numbered(swaps["wallet_key"].to_numpy())
    pool, _ = numbered(swaps["pool_key"].to_numpy())
    entry, _ = numbered(swaps.select(keyed("wallet_key", "pool_key")).to_series().to_numpy())
    first, figures = _traits(wallet, pool, entry, swaps["side"].to_numpy() == "buy",
                             established, swaps["ts"].to_numpy())
    folded = pl.DataFrame({"_row": first, **dict(zip(TRAITS, figures, strict=True))}).cast(
        {name: pl.Int64 if name in ("first_swap", "last_swap") else pl.UInt32
         for name in TRAITS})
    return first_rows(swaps, folded, ("chain_id", "wallet")).select(
        *TRAITS[:-2], "chain_id", "wallet", *TRAITS[-2:])


# What `_traits` gives per wallet, in its order.
TRAITS = ("swaps", "buys", "sells", "round_trips", "established", "pools", "hours", "first_swap",
          "last_swap", "entries", "sniped")
(_SWAPS, _BUYS, _SELLS, _ROUND_TRIPS, _ESTABLISHED, _POOLS, _HOURS, _FIRST_SWAP, _LAST_SWAP,
 _ENTRIES, _SNIPED) = range(len(TRAITS))


@numba.njit(cache=True, nogil=True)
def _traits(wallet, pool, entry, buy, established, ts):
    """Each wallet's first swap and its TRAITS, over swaps in chain order (wallets numbered in
    the order of their first swaps). `established` is 1, 0, or -1 for a pool of unknown age,
    which neither counts as established nor as a launch."""
    wallets = wallet.max() + 1 if len(wallet) else 0
    first = np.full(wallets, -1, np.int64)
    out = np.zeros((len(TRAITS), wallets), np.int64)
    hours = np.zeros(wallets, np.int64)
    pools, entries = pool.max() + 1 if len(pool) else 0, entry.max() + 1 if len(entry) else 0
    swapped, last = np.zeros(pools, np.int64), np.full(pools, -1, np.int64)
    traded, bought = np.zeros(entries, np.bool_), np.zeros(entries, np.bool_)
    for i in range(len(wallet)):
        w, p, e = wallet[i], pool[i], entry[i]
        if first[w] < 0:
            first[w], out[_FIRST_SWAP, w] = i, ts[i]
        out[_SWAPS, w] += 1
        out[_BUYS if buy[i] else _SELLS, w] += 1
        if established[i] == 1:
            out[_ESTABLISHED, w] += 1
        out[_LAST_SWAP, w] = max(out[_LAST_SWAP, w], ts[i])
        out[_FIRST_SWAP, w] = min(out[_FIRST_SWAP, w], ts[i])
        hours[w] |= 1 << (ts[i] // 3600 % 24)
        # A round trip: the pool's previous swap was this wallet's buy, and this is its sell.
        j = last[p]
        if j >= 0 and buy[j] and not buy[i] and wallet[j] == w:
            out[_ROUND_TRIPS, w] += 1
        last[p] = i
        if not traded[e]:
            traded[e] = True
            out[_POOLS, w] += 1
        if buy[i] and not bought[e]:
            bought[e] = True
            out[_ENTRIES, w] += 1
            if swapped[p] < SNIPE_SWAPS and established[i] == 0:
                out[_SNIPED, w] += 1
        swapped[p] += 1
    for w in range(wallets):
        h = hours[w]
        while h:
            out[_HOURS, w] += h & 1
            h >>= 1
    return first, out


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
