"""What a wallet's own swaps say about it: round trips, two-sided flow, first-swap entries,
timing spread and peak capital. Classifiers read these figures, never who the simulator says
a wallet is."""

import numba
import numpy as np
import polars as pl

from assets.folds import by_field
from assets.round_trips import POOL
from assets.wallets.positions import Owners
from core.fingerprints import (
    distinct,
    first_indices,
    first_rows,
    gathered,
    keyed,
    lookup,
    numbered,
)
from figures.ledger import BUY, POSITION, SELL, side_codes, slots

# The ledger's columns the traits are folded from.
TRAIT_INPUTS = ("position", "chain_id", "wallet", "pair", "ts", "side", "cost_change")
# Entering a pool among its first swaps is sniping.
SNIPE_SWAPS = 10
# A pool younger than this is a launch; market makers quote established pools.
ESTABLISHED_S = 7 * 86_400


def wallet_traits(ledger: pl.DataFrame, pools: pl.DataFrame, slot: np.ndarray | None = None,
                  owners: Owners | None = None) -> pl.DataFrame:
    """Per wallet of the ledger: when it was first seen and last active, its peak capital (the
    most cost basis it ever had open at once, across all its tokens: the running sum of its
    rows' changes to their positions' open cost), and what its swaps say: immediate round trips
    (a buy whose very next swap in the pool is the same wallet selling), sniped entries,
    two-sided flow, the share of swaps in established pools, the distinct hours of day it
    traded in, and pools traded. One pass over the ledger in chain order; rows find their
    wallet through their position (`slot`, see `slots`), pools are numbered by fingerprint (see
    assets/fingerprints.py), addresses are taken from a wallet's first row, and wallets come in
    the order of their first rows."""
    if slot is None:
        slot, _ = slots(ledger.with_columns(position=keyed(*POSITION)))
    owners = Owners.of(ledger, slot) if owners is None else owners
    pool, count = numbered(ledger.select(keyed(*POOL)).to_series().to_numpy())
    first_of_pool = first_indices(pool, count)
    # A pool's age at a row: its creation looked up once per pool, not once per row.
    known = pools.select("created_at", key=keyed(*POOL))
    created = ledger[first_of_pool].select(gathered(
        known["created_at"], lookup(keyed(*POOL), distinct(known["key"], "pair_tokens")))
        .dt.epoch("s")).to_series()
    ts = ledger["ts"].to_numpy()
    age = ts - created.fill_null(0).to_numpy()[pool]
    established = np.where(created.is_null().to_numpy()[pool], -1, age >= ESTABLISHED_S)
    first, figures, deployed = _traits(slot, len(owners.wallet), owners.wallet[slot],
                                       owners.wallets, pool, count,
                                       side_codes(ledger["side"]), established.astype(np.int8),
                                       ts, ledger["cost_change"].to_numpy())
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
def _traits(slot, positions, wallet, wallets, pool, pools, side, established, ts, cost_change):
    """Each wallet's first row, its TRAITS (one array each) and its peak capital, over the
    ledger in chain order (rows carry their position's `slot` and their wallet's number, wallets
    numbered in the order of their first rows). Only swaps count in the traits of swaps.
    `established` is 1, 0, or -1 for a pool of unknown age, which neither counts as established
    nor as a launch."""
    # One row per wallet (its TRAITS, then its first row), and its open cost and peak side by
    # side: a ledger row updates a few cache lines, not one per figure. Hours of day are a bit
    # mask until the end.
    out = np.zeros((wallets, len(TRAITS) + 1), np.int64)
    out[:, -1] = -1
    money = np.zeros((wallets, 2))
    # Per pool: its swaps so far, and whether its last swap was a buy and whose.
    swapped, last_buyer = np.zeros(pools, np.int64), np.full(pools, -1, np.int64)
    # A wallet's entries into a pool, by position: a pool's swaps are all in its base token.
    # A position keeps its first pool beside it with that pool's flags (traded 1, bought 2: a
    # token mostly trades in one pool); its other pools, rare, go to a table.
    entry = np.full(positions, -1, np.int64)
    others = numba.typed.Dict.empty(key_type=numba.types.int64, value_type=numba.types.int64)
    for each in range(len(slot)):
        at_pool, at = pool[each], ts[each]
        owner = wallet[each]
        row, cash = out[owner], money[owner]
        if row[-1] < 0:
            row[-1], row[_FIRST_SEEN], row[_LAST_ACTIVE] = each, at, at
        row[_FIRST_SEEN] = min(row[_FIRST_SEEN], at)
        row[_LAST_ACTIVE] = max(row[_LAST_ACTIVE], at)
        cash[0] += cost_change[each]
        cash[1] = max(cash[1], cash[0])
        if side[each] > SELL:  # a bare movement: the swap sides come first
            continue
        buy = side[each] == BUY
        if row[_SWAPS] == 0:
            row[_FIRST_SWAP] = row[_LAST_SWAP] = at
        row[_SWAPS] += 1
        row[_BUYS if buy else _SELLS] += 1
        if established[each] == 1:
            row[_ESTABLISHED] += 1
        row[_LAST_SWAP] = max(row[_LAST_SWAP], at)
        row[_FIRST_SWAP] = min(row[_FIRST_SWAP], at)
        row[_HOURS] |= 1 << (at // 3600 % 24)
        # A round trip: the pool's previous swap was this wallet's buy, and this is its sell.
        if not buy and last_buyer[at_pool] == owner:
            row[_ROUND_TRIPS] += 1
        last_buyer[at_pool] = owner if buy else -1
        position = slot[each]
        if entry[position] < 0:
            entry[position] = at_pool << 2
        mine, key = entry[position] >> 2 == at_pool, position * pools + at_pool
        flags = entry[position] & 3 if mine else others.get(key, 0)
        if not flags & 1:
            row[_POOLS] += 1
        if buy and not flags & 2:
            row[_ENTRIES] += 1
            if swapped[at_pool] < SNIPE_SWAPS and established[each] == 0:
                row[_SNIPED] += 1
        flags |= 3 if buy else 1
        if mine:
            entry[position] = at_pool << 2 | flags
        else:
            others[key] = flags
        swapped[at_pool] += 1
    for owner in range(wallets):
        hours, out[owner, _HOURS] = out[owner, _HOURS], 0
        while hours:
            out[owner, _HOURS] += hours & 1
            hours >>= 1
    fields = by_field(out, np.arange(wallets))
    return fields[-1], fields[:-1], money[:, 1].copy()
