"""What a wallet's own swaps say about it: round trips, two-sided flow, first-swap entries,
timing spread and peak capital. Classifiers read these figures, never who the simulator says
a wallet is."""

import numba
import numpy as np
import polars as pl

from assets.fingerprints import distinct, first_rows, gathered, keyed, lookup, numbered
from assets.round_trips import POOL
from assets.wallets.ledger import BUY, SELL, side_codes

# Entering a pool among its first swaps is sniping.
SNIPE_SWAPS = 10
# A pool younger than this is a launch; market makers quote established pools.
ESTABLISHED_S = 7 * 86_400


def wallet_traits(ledger: pl.DataFrame, pools: pl.DataFrame) -> pl.DataFrame:
    """Per wallet of the ledger: when it was first seen and last active, its peak capital (the
    most cost basis it ever had open at once, across all its tokens: the running sum of its
    rows' changes to their positions' open cost), and what its swaps say: immediate round trips
    (a buy whose very next swap in the pool is the same wallet selling), sniped entries,
    two-sided flow, the share of swaps in established pools, the distinct hours of day it
    traded in, and pools traded. One pass over the ledger in chain order; wallets, pools and a
    wallet's pools are numbered by fingerprint (see assets/fingerprints.py), their addresses
    taken from a wallet's first row, and wallets come in the order of their first rows."""
    known = pools.select("created_at", key=keyed(*POOL))
    at = lookup(pl.col("pool_key"), distinct(known["key"], "pair_tokens"))
    keys = ledger.select("ts", wallet_key=keyed("chain_id", "wallet"), pool_key=keyed(*POOL))
    established = keys.select(
        (pl.col("ts") - gathered(known["created_at"], at).dt.epoch("s")) >= ESTABLISHED_S
    ).to_series().cast(pl.Int8).fill_null(-1).to_numpy()
    wallet, wallets = numbered(keys["wallet_key"].to_numpy())
    pool, _ = numbered(keys["pool_key"].to_numpy())
    entry, _ = numbered(keys.select(keyed("wallet_key", "pool_key")).to_series().to_numpy())
    first, figures, deployed = _traits(wallet, wallets, pool, entry, side_codes(ledger["side"]),
                                       established, keys["ts"].to_numpy(),
                                       ledger["cost_change"].to_numpy())
    swapped = pl.col("swaps") > 0
    folded = pl.DataFrame({"_row": first, **dict(zip(TRAITS, figures, strict=True)),
                           "deployed_usd": deployed}).cast(
        {name: pl.Int64 if name in INSTANTS else pl.UInt32 for name in TRAITS}).with_columns(
        first_swap=pl.when(swapped).then("first_swap"),
        last_swap=pl.when(swapped).then("last_swap"))
    return first_rows(ledger, folded, ("chain_id", "wallet")).select(
        "chain_id", "wallet", pl.exclude("chain_id", "wallet"))


# What `_traits` gives per wallet, in its order.
TRAITS = ("swaps", "buys", "sells", "round_trips", "established", "pools", "hours", "first_swap",
          "last_swap", "entries", "sniped", "first_seen", "last_active")
INSTANTS = ("first_swap", "last_swap", "first_seen", "last_active")
(_SWAPS, _BUYS, _SELLS, _ROUND_TRIPS, _ESTABLISHED, _POOLS, _HOURS, _FIRST_SWAP, _LAST_SWAP,
 _ENTRIES, _SNIPED, _FIRST_SEEN, _LAST_ACTIVE) = range(len(TRAITS))


@numba.njit(cache=True, nogil=True)
def _traits(wallet, wallets, pool, entry, side, established, ts, cost_change):
    """Each wallet's first row, its TRAITS and its peak capital, over the ledger in chain order
    (wallets numbered in the order of their first rows). Only swaps count in the traits of
    swaps. `established` is 1, 0, or -1 for a pool of unknown age, which neither counts as
    established nor as a launch."""
    first = np.full(wallets, -1, np.int64)
    out = np.zeros((len(TRAITS), wallets), np.int64)
    hours = np.zeros(wallets, np.int64)
    open_cost, peak = np.zeros(wallets), np.zeros(wallets)
    pools, entries = pool.max() + 1 if len(pool) else 0, entry.max() + 1 if len(entry) else 0
    swapped, last = np.zeros(pools, np.int64), np.full(pools, -1, np.int64)
    traded, bought = np.zeros(entries, np.bool_), np.zeros(entries, np.bool_)
    for i in range(len(wallet)):
        w, p, e, t = wallet[i], pool[i], entry[i], ts[i]
        if first[w] < 0:
            first[w], out[_FIRST_SEEN, w], out[_LAST_ACTIVE, w] = i, t, t
        out[_FIRST_SEEN, w] = min(out[_FIRST_SEEN, w], t)
        out[_LAST_ACTIVE, w] = max(out[_LAST_ACTIVE, w], t)
        open_cost[w] += cost_change[i]
        peak[w] = max(peak[w], open_cost[w])
        if side[i] > SELL:  # a bare movement: the swap sides come first
            continue
        buy = side[i] == BUY
        if out[_SWAPS, w] == 0:
            out[_FIRST_SWAP, w] = out[_LAST_SWAP, w] = t
        out[_SWAPS, w] += 1
        out[_BUYS if buy else _SELLS, w] += 1
        if established[i] == 1:
            out[_ESTABLISHED, w] += 1
        out[_LAST_SWAP, w] = max(out[_LAST_SWAP, w], t)
        out[_FIRST_SWAP, w] = min(out[_FIRST_SWAP, w], t)
        hours[w] |= 1 << (t // 3600 % 24)
        # A round trip: the pool's previous swap was this wallet's buy, and this is its sell.
        j = last[p]
        if j >= 0 and side[j] == BUY and not buy and wallet[j] == w:
            out[_ROUND_TRIPS, w] += 1
        last[p] = i
        if not traded[e]:
            traded[e] = True
            out[_POOLS, w] += 1
        if buy and not bought[e]:
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
    return first, out, peak
