"""The live tail from the lake (publish/tail.py): the pair trades and wallet trades the latest
snapshot lacks, every pair's reserves valued at the lake's newest watermark, the pairs created
since and the live rows (tail/rows.py), made by the functions the batch makes
them with (the swap legs, the trade rows, the pair state, the wallet ledger's events, the
window blocks, the token rows), so that the next snapshot holds exactly what the tail showed."""

import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime, timedelta

import polars as pl

from assets.sql_models import SqlModel, load_models
from assets.tables import Tables
from checks.schemas.oracle import SIMULATED_WRITERS
from core.frontiers import reached
from core.handover import cleared, received
from core.home import home
from core.quotes import oracle_changes
from core.renewal import Renewal
from core.store import ObjectStore
from core.vocabulary import PAIR_WINDOWS
from figures.pair_rows import KEY, in_native, native_prices
from figures.pair_trades import (
    assemble_legs,
    assemble_liquidity_trades,
    leg_reads,
    trade_rows,
)
from figures.valuation import in_tokens, liquidity, quote_price_rows, valued
from publish.reader import latest_id
from publish.tail import Tail, publish_tail, read_pointer
from sources.lake import LakeReader
from tail.basis import Basis, prepared, preparer
from tail.rows import LiveRows, live_rows
from tail.wallet_trades import live_wallet_trades

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
    return LakeReader(root, {table: version} if version is not None else {}).frontier(table)


@dataclass(frozen=True)
class TailReads:
    """What the tails on one snapshot have read of the lake past it, kept so that the next
    tail reads only what was committed since: each chain event table's rows (up to `as_of`),
    the files they came from and each chain's highest block among them (`reached`), the swaps'
    legs, how many oracle updates priced them, the pairs whose sides were known, and whether
    the last tail read all of it anew (`whole`)."""

    snapshot_id: str
    as_of: datetime
    rows: dict[str, pl.DataFrame]
    files: dict[str, frozenset[str]]
    reached: dict[str, dict[int, int]]
    legs: pl.DataFrame
    priced: int
    pairs: pl.DataFrame
    whole: bool


# The chain event tables a tail reads past its snapshot.
TAIL_TABLES = ("swaps", "liquidity_events", "transfers", "reserves", "blocks")


def live_tail(lake: LakeReader, warehouse: Tables, basis: Basis, seq: int, picked_at: float,
              earlier: TailReads | None = None,
              nodes: dict[int, dict[str, str]] | None = None) -> tuple[Tail, TailReads]:
    """The tail of `lake` (pinned at its last mark, seen at `picked_at`) past the snapshot
    `basis` describes: what the lake at the snapshot's versions did not hold, and the live
    rows at the lake's watermark; and what it took, for the next. With what an earlier tail on
    the same snapshot took (`earlier`), only the rows committed since are read and priced, unless
    something it took was written again or priced anew since (`_still_valid`): then all of it is."""
    manifest = basis.manifest
    since = datetime.fromisoformat(manifest.as_of)
    as_of = lake.watermark or since

    def frontier(table: str) -> dict[int, int]:
        return frontier_at(str(lake.root), manifest.lake_versions.get(table), table)

    # One read of the oracle: the updates that price the tail's swaps and those about each
    # window's start, which the feeds' changes read.
    starts = [as_of - timedelta(seconds=s) for s in PAIR_WINDOWS.values()]
    updates = quote_price_rows(lake.scan("oracle_updates").filter(pl.any_horizontal(
        _within(since, as_of), *[_within(start, start) for start in starts]))).collect()
    prices = updates.filter(_within(since, as_of, "ts"))
    # The pairs' sides as the batch's model makes them, from the lake as it now stands: a
    # pair created since the snapshot trades live too.
    model = pair_tokens_model()
    pair_tokens = model.run({name: lake.scan(name) for name in model.tables})
    created = new_pairs(lake, pairs_at(str(lake.root), manifest.lake_versions.get("pairs")),
                        as_of)
    files = {t: lake.past_files(t, frontier(t)) for t in TAIL_TABLES}
    if earlier is not None and not _still_valid(earlier, manifest.snapshot_id, files, prices,
                                        pair_tokens, created):
        earlier = None
    upto = {t: frontier(t) if earlier is None else earlier.reached[t] for t in TAIL_TABLES}
    read = {t: lake.past(t, upto[t]).filter(pl.col("block_time") <= as_of).collect()
            for t in TAIL_TABLES}
    rows = read if earlier is None else {
        t: pl.concat([earlier.rows[t], read[t]]) for t in TAIL_TABLES}
    frames = {"quote_prices": prices.lazy(), "pair_tokens": pair_tokens.lazy(),
              "chains": lake.scan("chains"), "tokens": lake.scan("tokens"),
              "liquidity_events": rows["liquidity_events"].lazy()}
    # A swap's legs are its own (priced at its time, by its pool): the new swaps' are made and
    # put after those read earlier.
    made = assemble_legs(frames, read["swaps"].lazy().select(**leg_reads())).collect()
    legs = made if earlier is None else pl.concat([earlier.legs, made])
    swaps = rows["swaps"].lazy()
    trades = trade_rows(legs, swaps, assemble_liquidity_trades(frames), as_of)
    wallet_frames = {**frames, "swap_legs": legs.lazy(), "swaps": swaps,
                     "transfers": rows["transfers"].lazy()}
    pairs = live_pairs(rows["reserves"].lazy(), warehouse, frames, as_of)
    feeds = oracle_changes(updates.lazy(), as_of).sort("feed_id").collect()
    live = (LiveRows.none() if basis.at is None
            else live_rows(basis.at, trades, pairs, created, feeds, as_of))
    tail = Tail(seq, manifest.snapshot_id, since, as_of, _chain_marks(rows["blocks"].lazy()),
                nodes=nodes or {}, picked_at=picked_at, published_at=time.time(), trades=trades, pairs=pairs,
                new_pairs=created, wallet_trades=live_wallet_trades(wallet_frames, as_of),
                feeds=feeds, pair_figures=live.pair_figures, tokens=live.tokens,
                oracle_updates=real_updates(lake, as_of))
    return tail, TailReads(
        manifest.snapshot_id, as_of, rows,
        {t: frozenset(files[t]["path"]) for t in TAIL_TABLES},
        {t: _highest(upto[t], read[t]) for t in TAIL_TABLES}, legs, prices.height,
        pair_tokens.select(KEY), earlier is None)


# A real lake's price updates a tail carries: each feed's latest and those of the last hour,
# what an edge's hub answers the latest and recent instants from.
RECENT_UPDATES_S = 3_600


def real_updates(lake: LakeReader, as_of: datetime) -> pl.DataFrame:
    """A real chain's lake's price updates up to `as_of` (none on the simulator's lake, whose
    edges compute its price process themselves): each feed's latest and the last hour's.
    `lake` is pinned: its writer is the mark's, read once with it."""
    updates = lake.scan("oracle_updates")
    if lake.writer is None or lake.writer in SIMULATED_WRITERS:
        return updates.clear().collect()
    end = int(as_of.timestamp())
    known = updates.filter(pl.col("source") != "simulator", pl.col("publish_time") <= end)
    return known.filter((pl.col("publish_time") > end - RECENT_UPDATES_S) | (
        pl.col("publish_time") == pl.col("publish_time").max().over("feed_id"))).sort(
        "feed_id", "publish_time").collect()


def _still_valid(earlier: TailReads, snapshot_id: str, files: dict[str, pl.DataFrame],
           prices: pl.DataFrame, pair_tokens: pl.DataFrame, created: pl.DataFrame) -> bool:
    """Whether what `earlier` holds is still what the lake says: the same snapshot; every file it
    read still there and every new one past the blocks it took (no reorg, range read again or
    compaction since); no oracle update since at or before its watermark (which would price
    its swaps anew); and no pair it could have had a swap of but did not know the sides of."""
    if earlier.snapshot_id != snapshot_id:
        return False
    for table, now in files.items():
        if not earlier.files[table] <= set(now["path"]):
            return False
        back = now.filter(~pl.col("path").is_in(list(earlier.files[table])),
                          pl.col("min_block") <= reached(earlier.reached[table]))
        if not back.is_empty():
            return False
    if prices.filter(pl.col("ts") <= int(earlier.as_of.timestamp())).height != earlier.priced:
        return False
    added = pair_tokens.select(KEY).join(earlier.pairs, on=KEY, how="anti")
    if added.is_empty():
        return True
    chains = {chain for blocks in earlier.reached.values() for chain in blocks}
    highest = {chain: max(blocks.get(chain, -1) for blocks in earlier.reached.values())
               for chain in chains}
    late = (added.join(created.select("chain_id", pair="address", block="created_block"),
                       on=KEY, how="left")
            .filter(pl.col("block").is_null() | (pl.col("block") <= reached(highest))))
    return late.is_empty()


def _highest(blocks: dict[int, int], rows: pl.DataFrame) -> dict[int, int]:
    """Each chain's highest block among `rows`, or in `blocks` where it is higher there or
    they hold none of the chain."""
    out = dict(blocks)
    for chain, block in rows.group_by("chain_id").agg(pl.col("block_number").max()).iter_rows():
        out[chain] = max(block, out.get(chain, -1))
    return out


def _within(start: datetime, end: datetime, column: str = "publish_time") -> pl.Expr:
    """Oracle updates after `start` (and the ones before it that price it) up to `end`."""
    return pl.col(column).is_between(int((start - PRICES_BEFORE).timestamp()),
                                     int(end.timestamp()), closed="right")


def live_pairs(reserves: pl.LazyFrame, warehouse: Tables, frames: dict[str, pl.LazyFrame],
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


@functools.lru_cache(maxsize=8)
def pairs_at(root: str, version: int | None) -> pl.DataFrame:
    """The pairs (chain, address) a lake's pairs table held at a version (read once per
    snapshot, not opened at that version again every tail)."""
    then = LakeReader(root, {"pairs": version} if version is not None else {})
    return then.scan("pairs").select("chain_id", "address").collect()


def new_pairs(lake: LakeReader, known: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """The pairs the lake holds and `known` (the snapshot's, `pairs_at`) does not, created by
    `as_of`, in creation order."""
    return (lake.scan("pairs").filter(pl.col("created_at") <= as_of)
            .join(known.lazy(), on=["chain_id", "address"], how="anti")
            .select(NEW_PAIR_COLUMNS)
            .sort("chain_id", "created_block", "created_log_index").collect())


def _chain_marks(blocks: pl.LazyFrame) -> dict[int, datetime]:
    """Each chain's newest block time among the tail's blocks: how far the tail reaches on it
    (a chain without a block since the snapshot has none)."""
    newest = blocks.group_by("chain_id").agg(pl.col("block_time").max()).collect()
    return dict(newest.iter_rows())


def follow(lake: LakeReader, warehouse: Tables, store: ObjectStore, poll_s: float = 0.2,
           stop: Callable[[], bool] = lambda: False,
           progress: Callable[[str], None] = lambda _: None,
           renewal: Renewal | None = None) -> None:
    """Publish a tail after every new lake mark or snapshot, until `stop` says so, renewed in
    place by `renewal` between two tails when it is due; numbering goes on from the last tail
    published. A new snapshot is read and prepared in a process of its own while tails go on
    being built on the one before (they hold more trades, and their rows are the same), so a
    snapshot landing does not hold a tail up."""
    pointer = read_pointer(store)
    seq = 0 if pointer is None else int(pointer["seq"]) + 1
    seen: tuple[object, ...] | None = None
    basis: Basis | None = None
    earlier: TailReads | None = None
    making: Future[bytes] | None = None
    handed = cleared(home() / "tail" / "prepared")
    last_said = 0.0
    warned = Warnings()
    pool = preparer()
    try:
        while not stop():
            if renewal is not None:
                # Its preparing process ended first: none is left behind the new image.
                renewal.step(functools.partial(pool.shutdown, wait=True, cancel_futures=True))
            try:
                latest = latest_id(store)
            except ValueError as err:
                # A torn or wrong LATEST is a bad publish: tails go on on the last good
                # snapshot, and the next good publish is followed.
                warned.say(f"not following LATEST: {err}")
                latest = None if basis is None else basis.manifest.snapshot_id
            if making is None and latest is not None and (
                    basis is None or basis.manifest.snapshot_id != latest):
                making = pool.submit(prepared, store, latest, handed)
            if making is not None and (making.done() or basis is None):
                try:
                    basis = received(making.result())
                except BrokenProcessPool as err:
                    log.warning("the snapshot preparing process stopped (%s); starting another",
                                err)
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = preparer()
                except Exception as err:
                    # A snapshot pruned or torn under the reader: the next poll reads LATEST.
                    warned.say(f"could not read snapshot {latest} for the live tail: {err}")
                making = None
            mark = lake.progress()
            nodes = None if mark is None else mark.nodes()
            if mark is None or basis is None or (
                    mark.watermark, basis.manifest.snapshot_id, nodes) == seen:
                time.sleep(poll_s)
                continue
            now = (mark.watermark, basis.manifest.snapshot_id, nodes)
            picked = time.time()
            try:
                # Pinned at the mark just read: the tail is of the batch `now` names.
                tail, earlier = live_tail(lake.pinned(mark), warehouse, basis, seq, picked,
                                          earlier, nodes)
                publish_tail(store, tail)
            except Exception as err:
                # One tail that cannot be made (a file compacted away under the read, the
                # store down) is made again, whole, at the next poll.
                warned.say(f"live tail {seq} not published: {type(err).__name__}: {err}")
                earlier = None
                time.sleep(poll_s)
                continue
            seen, seq = now, seq + 1
            if time.monotonic() - last_said > 60:
                progress(f"live tail {tail.seq:,}: {tail.trades.height:,} trades since "
                         f"{tail.since:%H:%M:%S}, as of {tail.as_of:%H:%M:%S}, published "
                         f"{tail.published_at - picked:.2f}s after the lake's mark")
                last_said = time.monotonic()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


class Warnings:
    """A warning logged once while it repeats, and again after a minute: a failure that lasts
    does not fill the log."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self.last: tuple[str, float] | None = None

    def say(self, message: str) -> None:
        """Log `message` unless it was the last one logged, less than `every_s` ago."""
        now = time.monotonic()
        if self.last is not None and self.last[0] == message and now - self.last[1] < self.every_s:
            return
        log.warning("%s", message)
        self.last = (message, now)
