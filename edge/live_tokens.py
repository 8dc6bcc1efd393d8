"""A token's row live (spec 2.2): its pairs' rows with their live reserves and prices, its
swaps across those pairs (the snapshot's and the tail's) and its feed's prices at the tail's
watermark, made into the row by the batch's own `token_market` over the basis the snapshot
published (contract, registry, profile, holders)."""

import threading
from collections import defaultdict
from typing import Any

import orjson
import polars as pl

from core.fingerprints import keyed
from core.token_market import pair_rollup, token_market, token_pairs
from core.vocabulary import PAIR_WINDOWS
from core.windows import seen_from_quote, window_blocks
from edge.live import LONGEST_MS, LiveView, live_pair_item, pair_index, trades_of
from edge.memo import Kept, per_snapshot
from edge.snapshots import as_of_instant
from edge.spans import Spans, frame_spans
from publish.snapshot import Snapshot

TokenKey = tuple[int, str]
# What token_pairs reads of a pair row.
PAIR_COLUMNS = ("chain_id", "pair", "ticker", "venue_id", "liquidity_usd", "created_at",
                "is_scam", "rugged", "verdict", "score", "base", "quote", "base_price_usd",
                "quote_price_usd", *[f"price_change_{w}" for w in PAIR_WINDOWS])
ROW_COLUMNS = ("chain_id", "address", "item", "market", "instances")

# Per snapshot and token, its swaps in the snapshot that a window can still reach.
_swaps: Kept = Kept(256)
# Per snapshot, tail and token, its live row (item, market and instances).
_rows: Kept = Kept(4096)
_rows_lock = threading.Lock()
# The tokens whose rows were asked for lately: each new tail's rows of these are made before
# the tail is served, off the request path.
_hot: Kept = Kept(256)


@per_snapshot(kept=4)
def pairs_by_token(snapshot: Snapshot) -> Spans | None:
    """Every pair row seen from each of its two tokens, found by (chain id, token); None for a
    snapshot without the columns (published before live token rows)."""
    pairs = snapshot.tables.get("pairs")
    if pairs is None or snapshot.tables.get("token_basis") is None or not set(
            PAIR_COLUMNS) <= set(pairs.columns):
        return None
    rows = pairs.select(PAIR_COLUMNS)
    seen = pl.concat([rows.with_columns(token=pl.col("base")),
                      rows.with_columns(token=pl.col("quote"))]).sort("chain_id", "token", "pair")
    return frame_spans(seen, ("chain_id", "token"))


@per_snapshot(kept=4)
def basis_index(snapshot: Snapshot) -> tuple[Spans, dict[str, list[TokenKey]]]:
    """The published token basis by (chain id, address), and each registry token's
    instances."""
    basis = snapshot.tables["token_basis"].sort("chain_id", "address")
    known = basis.filter(pl.col("token_id").is_not_null())
    instances: dict[str, list[TokenKey]] = defaultdict(list)
    for token_id, chain_id, address in known.select("token_id", "chain_id", "address").iter_rows():
        instances[token_id].append((chain_id, address))
    return frame_spans(basis, ("chain_id", "address")), dict(instances)


def _sided(rows: pl.DataFrame, key: TokenKey, quote: bool) -> pl.DataFrame:
    """One pair's trade rows as window_blocks reads a token's swaps: keyed by the token, the
    maker as the batch's fingerprint, the side as the token sees it."""
    swaps = rows.select(pl.lit(key[0]).alias("chain_id"), pl.lit(key[1]).alias("token"),
                        "at_ms", "volume_usd", "price_usd", side="tx_type", maker=keyed("maker"))
    return swaps.with_columns(side=seen_from_quote()) if quote else swaps


def _snapshot_swaps(snapshot: Snapshot, key: TokenKey,
                    pairs: pl.DataFrame) -> pl.DataFrame | None:
    """The token's swaps in the snapshot inside the longest window of its watermark (a later
    watermark's windows start later), across its pairs; made once per snapshot."""
    memo = (snapshot.snapshot_id, key)
    found = _swaps.get(memo)
    if found is None:
        start = int(as_of_instant(snapshot).timestamp() * 1000) - LONGEST_MS
        trades = trades_of(snapshot)
        parts = [_sided(trades.rows((key[0], pair)).filter(pl.col("at_ms") > start), key,
                        quote == key[1])
                 for pair, quote in pairs.select("pair", "quote").iter_rows()]
        found = _swaps.keep(memo, pl.concat(parts) if parts else None)
    return found


def _swaps_of(snapshot: Snapshot, view: LiveView, key: TokenKey,
              pairs: pl.DataFrame) -> pl.DataFrame | None:
    """The token's swaps a window can reach at the tail's watermark: the snapshot's and the
    tail's, across its pairs."""
    parts = [_snapshot_swaps(snapshot, key, pairs)]
    for pair, quote in pairs.select("pair", "quote").iter_rows():
        newer = view.trades.get((key[0], pair))
        if newer is not None and not newer.is_empty():
            parts.append(_sided(newer, key, quote == key[1]))
    found = [p for p in parts if p is not None]
    if not found:
        return None
    return pl.concat([p.cast(found[0].schema) for p in found])


def _live_pairs(snapshot: Snapshot, view: LiveView, key: TokenKey, seen: Spans) -> pl.DataFrame:
    """The token's pair rows with their reserves valued at the tail's watermark, and the pools
    created since the snapshot (liquidity and swaps only: the snapshot has not judged their
    risk, so they are never the main pair unless nothing else is)."""
    pairs = seen.rows(key).drop("token")
    state = [view.pairs.get((key[0], p), {}) for p in pairs["pair"].to_list()]
    moved = pl.DataFrame({
        "liquidity_usd": [s.get("liquidity_usd") for s in state],
        "base_price_usd": [s.get("price_usd") for s in state],
        "quote_price_usd": [s.get("quote_usd") for s in state],
        "valued": [bool(s) for s in state]}, schema_overrides={
        c: pl.Float64 for c in ("liquidity_usd", "base_price_usd", "quote_price_usd")})
    pairs = pairs.with_columns(
        *[pl.when(pl.lit(moved["valued"])).then(pl.lit(moved[c])).otherwise(pl.col(c)).alias(c)
          for c in ("liquidity_usd", "base_price_usd", "quote_price_usd")])
    created = [view.pairs[k] for k in sorted(view.created)
               if k[0] == key[0] and k in view.pairs and key[1] in (
                   view.pairs[k]["base"], view.pairs[k]["quote"])]
    if not created:
        return pairs
    when = dict(zip(view.new_pairs["address"].to_list(), view.new_pairs["created_at"].to_list(),
                    strict=True))
    new = pl.DataFrame([{
        "chain_id": key[0], "pair": s["pair"], "liquidity_usd": s["liquidity_usd"],
        "created_at": when.get(s["pair"]), "rugged": False, "base": s["base"],
        "quote": s["quote"], "base_price_usd": s["price_usd"],
        "quote_price_usd": s["quote_usd"]} for s in created])
    return pl.concat([pairs, new.cast({c: t for c, t in pairs.schema.items() if c in new.columns})],
                     how="diagonal")


def _with_main_changes(snapshot: Snapshot, view: LiveView, pairs: pl.DataFrame,
                       main: str) -> pl.DataFrame:
    """The pair rows with the main pair's price changes live (the token's price changes when
    no feed prices it)."""
    item = pair_index(snapshot).get(int(pairs["chain_id"][0]), {}).get(main)
    if item is None:
        return pairs
    row = orjson.loads(live_pair_item(snapshot, view, (int(pairs["chain_id"][0]), main), item))
    is_main = pl.col("pair") == main
    return pairs.with_columns(
        *[pl.when(is_main).then(pl.lit(row["price_change"][w], pl.Float64))
          .otherwise(pl.col(f"price_change_{w}")).alias(f"price_change_{w}")
          for w in PAIR_WINDOWS])


def _made(snapshot: Snapshot, view: LiveView, keys: list[TokenKey],
          seen: Spans, basis: Spans) -> pl.DataFrame:
    """The live rows of a token's instances (one computation for all of them)."""
    pairs, swaps = [], []
    for key in keys:
        rows = _live_pairs(snapshot, view, key, seen)
        if rows.is_empty():
            continue
        main = (pair_rollup(token_pairs(rows.lazy())).filter(pl.col("address") == key[1])
                .select("main_pair").collect().item())
        pairs.append(_with_main_changes(snapshot, view, rows, main))
        found = _swaps_of(snapshot, view, key, rows)
        if found is not None:
            swaps.append(found)
    if not pairs:
        return pl.DataFrame(schema=dict.fromkeys(ROW_COLUMNS, pl.String))
    bases = pl.concat([basis.rows(key) for key in keys])
    activity = (window_blocks(pl.concat(swaps).lazy(), view.as_of_ms, key="token") if swaps
                else pl.LazyFrame(schema={"chain_id": pl.Int64, "token": pl.String}))
    rows = token_market(bases.lazy(), pl.concat(pairs, how="diagonal_relaxed").lazy(),
                        activity, view.feeds.lazy(), view.as_of)
    return rows.select(ROW_COLUMNS)


def live_token_row(snapshot: Snapshot, view: LiveView, key: TokenKey) -> dict[str, Any] | None:
    """A token's row (`item`, `market`, `instances`) as of the tail's watermark; None when it
    is the snapshot's (no tail adds to it, or a snapshot without the basis), or when the
    snapshot lists no such token."""
    _hot.keep(key, True)
    memo = (snapshot.snapshot_id, view.seq, key)
    found: dict[str, Any] | None = _rows.get(memo)
    if found is not None:
        return found
    seen = pairs_by_token(snapshot)
    if seen is None:
        return None
    basis, instances = basis_index(snapshot)
    own = basis.rows(key)
    if own.is_empty():
        return None
    token_id = own["token_id"][0]
    keys = sorted(instances.get(token_id, [key])) if token_id is not None else [key]
    made = _made(snapshot, view, keys, seen, basis)
    with _rows_lock:
        for row in made.iter_rows(named=True):
            _rows.keep((snapshot.snapshot_id, view.seq, (row["chain_id"], row["address"])), row)
    return next((r for r in made.iter_rows(named=True)
                 if (r["chain_id"], r["address"]) == key), None)


def warm_token_rows(snapshot: Snapshot, view: LiveView) -> None:
    """Make the live rows of the tokens asked for lately, kept for the requests to come."""
    for key in list(_hot):
        live_token_row(snapshot, view, key)
