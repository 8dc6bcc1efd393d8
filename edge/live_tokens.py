"""A token's row live (spec 2.2): its pairs' rows with their live reserves and prices, its
window block and its feed's prices at the tail's watermark, made into the row by the batch's
own `token_market` over the basis the snapshot published (contract, registry, profile,
holders). The window block is core.windows' over the token's swaps across its pairs, moved from
the snapshot's watermark (made once per snapshot) by what left the windows since and the
tail's swaps (`moved_blocks`): a token's pairs may hold most of a chain's swaps, summed once
per snapshot, not on every tail."""

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import polars as pl

from core.fingerprints import keyed
from core.token_market import pair_rollup, token_market, token_pairs
from core.vocabulary import PAIR_WINDOWS
from core.windows import (
    blocks_of,
    left_ranges,
    maker_sums,
    moved_blocks,
    seen_from_quote,
    window_ranges,
)
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

# Per snapshot and token, its swaps in the snapshot that a window can still reach, its makers'
# window sums and its window block at the snapshot's watermark.
_swaps: Kept = Kept(256)
# Per snapshot, tail and token, its live row (item, market and instances).
_rows: Kept = Kept(4096)
_rows_lock = threading.Lock()
# Per snapshot and token, its newest live row.
_newest: Kept = Kept(4096)
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


def instances_of(snapshot: Snapshot, token_id: str) -> list[TokenKey]:
    """A registry token's instances the snapshot's basis lists (none for a snapshot without
    it)."""
    return [] if pairs_by_token(snapshot) is None else basis_index(snapshot)[1].get(token_id, [])


def _sided(rows: pl.DataFrame, key: TokenKey, quoted: list[str]) -> pl.DataFrame:
    """Trade rows of the token's pairs as core.windows reads its swaps: keyed by the token, the
    maker as the batch's fingerprint, the side as the token sees it (swapped in the pairs it is
    the quote of, `quoted`)."""
    return rows.select(
        pl.lit(key[0]).alias("chain_id"), pl.lit(key[1]).alias("token"), "at_ms",
        "volume_usd", "price_usd", maker=keyed("maker"),
        side=pl.when(pl.col("pair").is_in(quoted)).then(seen_from_quote("tx_type"))
        .otherwise(pl.col("tx_type")))


def _quoted(key: TokenKey, pairs: pl.DataFrame) -> list[str]:
    """The pairs the token is the quote of."""
    return pairs.filter(pl.col("quote") == key[1])["pair"].to_list()


@dataclass(frozen=True)
class AtSnapshot:
    """A token's swaps in the snapshot that a window can still reach (in time order, with
    their times), its makers' window sums and its window block at the snapshot's watermark."""

    swaps: pl.DataFrame
    at_ms: np.ndarray
    sums: pl.DataFrame
    blocks: pl.DataFrame

    def within(self, ranges: dict[str, tuple[int, int]]) -> pl.DataFrame:
        """The swaps in any of the (start, end] ranges, each once."""
        spans = sorted((lo, hi) for lo, hi in ranges.values() if lo < hi)
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        cuts = [np.searchsorted(self.at_ms, edge, side="right") for span in merged
                for edge in span]
        return pl.concat([self.swaps.clear(), *[self.swaps.slice(int(a), int(b - a))
                                                for a, b in zip(cuts[::2], cuts[1::2],
                                                                strict=True)]])


def _at_snapshot(snapshot: Snapshot, key: TokenKey, pairs: pl.DataFrame) -> AtSnapshot:
    """The token's figures at the snapshot's watermark (see `AtSnapshot`); made once per
    snapshot."""
    memo = (snapshot.snapshot_id, key)
    found = _swaps.get(memo)
    if found is None:
        at = int(as_of_instant(snapshot).timestamp() * 1000)
        trades = trades_of(snapshot)
        rows = pl.concat([trades.empty(), *[trades.rows((key[0], pair))
                                            for pair in pairs["pair"].to_list()]])
        swaps = _sided(rows.filter(pl.col("at_ms") > at - LONGEST_MS), key,
                       _quoted(key, pairs)).sort("at_ms", maintain_order=True)
        sums = maker_sums(swaps.lazy(), window_ranges(at), "token").collect()
        with _rows_lock:
            found = _swaps.keep(memo, AtSnapshot(swaps, swaps["at_ms"].to_numpy(), sums,
                                                 blocks_of(sums.lazy(), "token").collect()))
    return found


def _added(view: LiveView, key: TokenKey, pairs: pl.DataFrame) -> pl.DataFrame | None:
    """The token's swaps in the tail, across its pairs."""
    newer = [rows for pair in pairs["pair"].to_list()
             if (rows := view.trades.get((key[0], pair))) is not None and not rows.is_empty()]
    if not newer:
        return None
    return _sided(pl.concat(newer, how="diagonal_relaxed"), key, _quoted(key, pairs))


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
                       mains: set[tuple[int, str]]) -> pl.DataFrame:
    """The pair rows with their main pairs' price changes live (a token's price changes when
    no feed prices it)."""
    index = pair_index(snapshot)
    changes = [{"chain_id": chain_id, "pair": pair, **{
        f"live_{w}": change for w, change in orjson.loads(live_pair_item(
            snapshot, view, (chain_id, pair), item))["price_change"].items()}}
        for chain_id, pair in sorted(mains)
        if (item := index.get(chain_id, {}).get(pair)) is not None]
    if not changes:
        return pairs
    live = pl.DataFrame(changes).cast({f"live_{w}": pl.Float64 for w in PAIR_WINDOWS})
    return (pairs.join(live.cast({"chain_id": pairs.schema["chain_id"]}), on=["chain_id", "pair"],
                       how="left")
            .with_columns(*[pl.coalesce(f"live_{w}", f"price_change_{w}")
                            .alias(f"price_change_{w}") for w in PAIR_WINDOWS])
            .drop([f"live_{w}" for w in PAIR_WINDOWS]))


def _made(snapshot: Snapshot, view: LiveView, keys: list[TokenKey],
          seen: Spans, basis: Spans) -> pl.DataFrame:
    """The live rows of many tokens (with every registry instance among them) in one
    computation: its fixed cost is most of one token's."""
    live = {key: rows for key in keys
            if not (rows := _live_pairs(snapshot, view, key, seen)).is_empty()}
    if not live:
        return pl.DataFrame(schema=dict.fromkeys(ROW_COLUMNS, pl.String))
    # A pair of two of the tokens is one pair row, as in the batch.
    pairs = pl.concat(list(live.values()), how="diagonal_relaxed").unique(
        ["chain_id", "pair"], keep="first", maintain_order=True)
    rollup = pair_rollup(token_pairs(pairs.lazy())).select(
        "chain_id", "address", "main_pair").collect()
    mains = {(c, m) for c, a, m in rollup.iter_rows() if (c, a) in live and m is not None}
    then = [_at_snapshot(snapshot, key, rows) for key, rows in live.items()]
    since = int(as_of_instant(snapshot).timestamp() * 1000)
    left = left_ranges(since, view.as_of_ms)
    schema = then[0].swaps.schema
    added = [a.cast(schema) for key, rows in live.items()
             if (a := _added(view, key, rows)) is not None]
    activity = moved_blocks(
        pl.concat([t.blocks for t in then]).lazy(), pl.concat([t.sums for t in then]).lazy(),
        [(maker_sums(pl.concat([t.within(left) for t in then]).lazy(), left, "token"), -1),
         (maker_sums(pl.concat([then[0].swaps.clear(), *added]).lazy(),
                     window_ranges(view.as_of_ms), "token"), 1)], "token")
    rows = token_market(pl.concat([basis.rows(key) for key in live]).lazy(),
                        _with_main_changes(snapshot, view, pairs, mains).lazy(),
                        activity, view.feeds.lazy(), view.as_of)
    return rows.select(ROW_COLUMNS)


def live_token_rows(snapshot: Snapshot, view: LiveView,
                    wanted: list[TokenKey]) -> dict[TokenKey, dict[str, Any]]:
    """Tokens' rows (`item`, `market`, `instances`, and `as_of`, the tail's watermark) as of
    the tail's watermark, those not made yet for this tail made in one computation; a token is
    left out when its row is the snapshot's (a snapshot without the basis) or the snapshot
    lists no such token."""
    seen = pairs_by_token(snapshot)
    if seen is None:
        return {}
    basis, instances = basis_index(snapshot)
    found: dict[TokenKey, dict[str, Any]] = {}
    todo: set[TokenKey] = set()
    for key in wanted:
        _hot.keep(key, True)
        row = _rows.get((snapshot.snapshot_id, view.seq, key))
        if row is not None:
            found[key] = row
            continue
        own = basis.rows(key)
        if not own.is_empty():
            token_id = own["token_id"][0]
            todo.update(instances.get(token_id, [key]) if token_id is not None else [key])
    if todo:
        made = _made(snapshot, view, sorted(todo), seen, basis)
        with _rows_lock:
            for row in made.iter_rows(named=True):
                key = (row["chain_id"], row["address"])
                row["as_of"] = view.as_of_text
                _rows.keep((snapshot.snapshot_id, view.seq, key), row)
                _newest.pop((snapshot.snapshot_id, key), None)
                _newest.keep((snapshot.snapshot_id, key), row)
                if key in wanted:
                    found[key] = row
    return found


def made_token_row(snapshot: Snapshot, view: LiveView, key: TokenKey) -> dict[str, Any] | None:
    """The token's newest live row made on `snapshot` (for this tail or, while this one's is
    being made, an earlier one: its `as_of` says which); None when none is yet."""
    _hot.keep(key, True)
    found: dict[str, Any] | None = _rows.get((snapshot.snapshot_id, view.seq, key))
    return found if found is not None else _newest.get((snapshot.snapshot_id, key))


def warm_token_rows(snapshot: Snapshot | None, view: LiveView | None) -> None:
    """Make the live rows of the tokens asked for lately, kept for the requests to come."""
    if snapshot is not None and view is not None:
        live_token_rows(snapshot, view, list(_hot))
