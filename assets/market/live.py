"""The live tail from the lake (publish/live.py): the pair trades and wallet trades the latest
snapshot lacks, every pair's reserves valued at the lake's newest watermark, the pairs created
since and the live rows (assets/market/live_rows.py), made by the functions the batch makes
them with (the swap legs, the trade rows, the pair state, the wallet ledger's events, the
window blocks, the token rows), so that the next snapshot holds exactly what the tail showed."""

import functools
import logging
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime, timedelta

import polars as pl

from assets.market.assets import in_tokens, liquidity, quote_price_rows, valued
from assets.market.live_rows import READS, AtSnapshot, LiveRows, live_rows
from assets.market.pair_rows import KEY, in_native, native_prices
from assets.market.pair_trades import (
    assemble_legs,
    assemble_liquidity_trades,
    leg_reads,
    trade_rows,
)
from assets.sql_models import SqlModel, load_models
from assets.wallets.live import live_wallet_trades
from assets.warehouse import Warehouse
from core.priority import BATCH_NICENESS
from core.quotes import oracle_changes
from core.vocabulary import PAIR_WINDOWS
from publish.live import Tail, publish_tail, read_pointer
from publish.snapshot import Manifest, latest_id, load_snapshot
from publish.store import ObjectStore
from sources.lake import Lake

log = logging.getLogger("chaintape.live")
# Oracle updates read before the tail's start: a swap is priced at its feed's latest update,
# which the oracle's cadence (seconds) keeps well inside this.
PRICES_BEFORE = timedelta(hours=6)


@functools.cache
def pair_tokens_model() -> SqlModel:
    """The batch's pair_tokens SQL model, loaded once."""
    return load_models()["pair_tokens"]


LIVE_PAIR_COLUMNS = ("chain_id", "pair", "base", "quote", "base_reserve", "quote_reserve", "quote_usd",
                     "price_usd", "liquidity_usd", "native_usd", "base_price_native",
                     "quote_price_native")


@functools.lru_cache(maxsize=32)
def frontier_at(root: str, version: int | None, table: str) -> dict[int, int]:
    """Each chain's highest block in a lake table at a version (read once per snapshot)."""
    return Lake(root, {table: version} if version is not None else {}).frontier(table)


@dataclass(frozen=True)
class Basis:
    """A snapshot as the tails built on it read it: its manifest and what the live rows are
    made from (None when it lacks the tables)."""

    manifest: Manifest
    at: AtSnapshot | None


def basis_of(store: ObjectStore, snapshot_id: str) -> Basis:
    """Read a snapshot's manifest and make what its tails' live rows are made from."""
    snapshot = load_snapshot(store, snapshot_id, only=READS)
    made = AtSnapshot.of(snapshot) if set(READS) <= set(snapshot.tables) else None
    return Basis(snapshot.manifest, made)


def live_tail(lake: Lake, warehouse: Warehouse, basis: Basis, seq: int,
              picked_at: float) -> Tail:
    """The tail of `lake` (pinned at its last mark, seen at `picked_at`) past the snapshot
    `basis` describes: what the lake at the snapshot's versions did not hold, and the live
    rows at the lake's watermark."""
    manifest = basis.manifest
    since = datetime.fromisoformat(manifest.as_of)
    as_of = lake.watermark or since
    then = Lake(lake.root, manifest.lake_versions)

    def past(table: str) -> pl.LazyFrame:
        """What the snapshot lacks of a chain event table, up to the watermark."""
        reached = frontier_at(str(lake.root), manifest.lake_versions.get(table), table)
        return lake.past(table, reached).filter(pl.col("block_time") <= as_of)

    # One read of the oracle: the updates that price the tail's swaps and those about each
    # window's start, which the feeds' changes read.
    starts = [as_of - timedelta(seconds=s) for s in PAIR_WINDOWS.values()]
    updates = quote_price_rows(lake.scan("oracle_updates").filter(pl.any_horizontal(
        _within(since, as_of), *[_within(start, start) for start in starts]))).collect()
    prices = updates.filter(_within(since, as_of, "ts"))
    # The pairs' sides as the batch's model makes them, from the lake as it now stands: a
    # pair created since the snapshot trades live too.
    model = pair_tokens_model()
    pair_tokens = model.run({name: lake.scan(name) for name in model.tables}).lazy()
    frames = {"quote_prices": prices.lazy(), "pair_tokens": pair_tokens,
              "chains": lake.scan("chains"), "tokens": lake.scan("tokens"),
              "liquidity_events": past("liquidity_events")}
    swaps = past("swaps").collect()
    legs = assemble_legs(frames, swaps.lazy().with_row_index("swap").select(**leg_reads()))
    made = legs.collect()
    trades = trade_rows(made, swaps.lazy(), assemble_liquidity_trades(frames), as_of)
    wallet_frames = {**frames, "swap_legs": made.lazy(), "swaps": swaps.lazy(),
                     "transfers": past("transfers")}
    pairs = live_pairs(past("reserves"), warehouse, frames, as_of)
    created = new_pairs(lake, then, as_of)
    feeds = oracle_changes(updates.lazy(), as_of).sort("feed_id").collect()
    rows = (LiveRows.none() if basis.at is None
            else live_rows(basis.at, trades, pairs, created, feeds, as_of))
    return Tail(seq, manifest.snapshot_id, since, as_of, _chain_marks(past("blocks")),
                picked_at=picked_at, published_at=time.time(), trades=trades, pairs=pairs,
                new_pairs=created, wallet_trades=live_wallet_trades(wallet_frames, as_of),
                feeds=feeds, pair_figures=rows.pair_figures, tokens=rows.tokens)


def _within(start: datetime, end: datetime, column: str = "publish_time") -> pl.Expr:
    """Oracle updates after `start` (and the ones before it that price it) up to `end`."""
    return pl.col(column).is_between(int((start - PRICES_BEFORE).timestamp()),
                                     int(end.timestamp()), closed="right")


def live_pairs(reserves: pl.LazyFrame, warehouse: Warehouse, frames: dict[str, pl.LazyFrame],
               as_of: datetime) -> pl.DataFrame:
    """Every pair's tokens and reserves at `as_of` (its latest in the tail's `reserves`, else
    the warehouse's pair state), valued at `as_of` as the pair state values them, with its
    chain's native price."""
    pairs = frames["pair_tokens"].select(
        *KEY, "base", "quote", "base_is_token0", "base_decimals", "quote_decimals",
        "quote_feed_id")
    moved = (reserves.sort("chain_id", "block_number", "log_index")
             .group_by(KEY, maintain_order=True).agg(pl.col("reserve0").last(), pl.col("reserve1").last()))
    kept = (warehouse.scan("pair_state").select(*KEY, "base_reserve", "quote_reserve")
            .join(moved.select(KEY), on=KEY, how="anti")
            .join(pairs.select(*KEY, "quote_feed_id"), on=KEY))
    reserves = pl.concat([kept, in_tokens(moved, pairs)], how="diagonal_relaxed")
    return (valued(reserves, frames["quote_prices"].collect(), int(as_of.timestamp()))
            .with_columns(liquidity_usd=liquidity())
            .join(native_prices(frames, as_of), on="chain_id", how="left")
            .with_columns(**in_native("price_usd", "quote_usd"))
            .join(pairs.select(*KEY, "base", "quote"), on=KEY, how="left")
            .select(LIVE_PAIR_COLUMNS).sort(KEY).collect())


NEW_PAIR_COLUMNS = ("chain_id", "address", "factory", "factory_type", "token0", "token1",
                    "fee_bps", "created_block", "created_log_index", "created_tx", "created_at",
                    "creator", "launchpad", "is_perp")


def new_pairs(lake: Lake, then: Lake, as_of: datetime) -> pl.DataFrame:
    """The pairs the lake holds that it did not hold at the snapshot's versions (`then`),
    created by `as_of`, in creation order."""
    return (lake.scan("pairs").filter(pl.col("created_at") <= as_of)
            .join(then.scan("pairs").select("chain_id", "address"), on=["chain_id", "address"],
                  how="anti")
            .select(NEW_PAIR_COLUMNS)
            .sort("chain_id", "created_block", "created_log_index").collect())


def _chain_marks(blocks: pl.LazyFrame) -> dict[int, datetime]:
    """Each chain's newest block time among the tail's blocks: how far the tail reaches on it
    (a chain without a block since the snapshot has none)."""
    newest = blocks.group_by("chain_id").agg(pl.col("block_time").max()).collect()
    return dict(newest.iter_rows())


def _preparer() -> ProcessPoolExecutor:
    """A process of its own, at the batch's priority, where snapshots are prepared: the tails
    get the CPU first, and the preparation never holds the writer's interpreter."""
    return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=os.nice, initargs=(BATCH_NICENESS,))


def follow(lake: Lake, warehouse: Warehouse, store: ObjectStore, poll_s: float = 0.2,
           stop: Callable[[], bool] = lambda: False,
           progress: Callable[[str], None] = lambda _: None) -> None:
    """Publish a tail after every new lake mark or snapshot, until `stop` says so; numbering
    goes on from the last tail published. A new snapshot is read and prepared in a process of
    its own while tails go on being built on the one before (they hold more trades, and their
    rows are the same), so a snapshot landing does not hold a tail up."""
    pointer = read_pointer(store)
    seq = 0 if pointer is None else int(pointer["seq"]) + 1
    seen: tuple[object, str] | None = None
    basis: Basis | None = None
    making: Future[Basis] | None = None
    last_said = 0.0
    pool = _preparer()
    try:
        while not stop():
            latest = latest_id(store)
            if making is None and latest is not None and (
                    basis is None or basis.manifest.snapshot_id != latest):
                making = pool.submit(basis_of, store, latest)
            if making is not None and (making.done() or basis is None):
                try:
                    basis = making.result()
                except BrokenProcessPool as err:
                    log.warning("the snapshot preparing process stopped (%s); starting another",
                                err)
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = _preparer()
                except Exception as err:
                    # A snapshot pruned or torn under the reader: the next poll reads LATEST.
                    log.warning("could not read snapshot %s for the live tail: %s", latest, err)
                making = None
            mark = lake.progress()
            if mark is None or basis is None or (
                    mark.watermark, basis.manifest.snapshot_id) == seen:
                time.sleep(poll_s)
                continue
            now = (mark.watermark, basis.manifest.snapshot_id)
            picked = time.time()
            tail = live_tail(lake.pinned(), warehouse, basis, seq, picked)
            publish_tail(store, tail)
            seen, seq = now, seq + 1
            if time.monotonic() - last_said > 60:
                progress(f"live tail {tail.seq:,}: {tail.trades.height:,} trades since "
                         f"{tail.since:%H:%M:%S}, as of {tail.as_of:%H:%M:%S}, published "
                         f"{tail.published_at - picked:.2f}s after the lake's mark")
                last_said = time.monotonic()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
