"""Follows the live tail (publish/tail.py) and serves the dynamic lookups fresher than the
snapshot: a pair's trades and candles from the snapshot's rows and what arrived after its
watermark, and its row and its tokens' rows with the live figures the tail's writer made with
the batch's functions (tail/rows.py): an edge computes no figure itself."""

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import polars as pl

from core.caches import LruCache
from core.frontiers import reached
from core.store import ObjectStore, StoreUnavailable
from core.wire import iso_text
from edge.memo import per_snapshot
from edge.snapshots import SnapshotHolder, as_of_instant
from edge.spans import Spans, frame_spans, indexed, sorted_spans
from edge.web.http import Request
from edge.web.registry import Params
from publish.reader import Snapshot
from publish.tail import Tail, load_tail, read_pointer

log = logging.getLogger("chaintape.edge")
KEY = ("chain_id", "pair")
PairKey = tuple[int, str]

# Where each pair's trades sit in the trades table's parts (each sorted by pair, block, log).
trades_of = indexed("trades", ("chain_id", "pair"), ahead=True)


@dataclass(frozen=True)
class LiveView:
    """The tail as one snapshot sees it: its sequence number, the lake's watermark it reaches,
    each pair's trades after the snapshot's, each pair's valued reserves, how far each chain
    reaches, the pairs the snapshot lacks (`new_pairs`, in creation order), each wallet's
    trades after the snapshot's, the price feeds' prices and changes at the watermark, the
    window figures of the pairs whose windows moved and each token's live row (`item`,
    `market`, `instances`). The tables by key are the tail's own, sorted and searched: a tail
    holds thousands of pairs, wallets and tokens, and a view made anew every tail must not
    build an object for each (it would hold the interpreter from the requests)."""

    seq: int
    as_of: datetime
    trades: Spans
    pairs: Spans
    chains: dict[int, datetime]
    new_pairs: pl.DataFrame
    wallet_trades: Spans
    feeds: pl.DataFrame
    figures: Spans
    tokens: Spans

    @functools.cached_property
    def created(self) -> set[PairKey]:
        """The pairs created since the snapshot."""
        return set(self.new_pairs.select("chain_id", "address").iter_rows())

    @property
    def as_of_ms(self) -> int:
        """The watermark in unix milliseconds."""
        return int(self.as_of.timestamp() * 1000)

    @property
    def as_of_text(self) -> str:
        """The watermark as the snapshots' manifests write theirs."""
        return self.as_of.isoformat()


def _frontier(snapshot: Snapshot, table: str) -> dict[int, int]:
    """Each chain's highest block in a table, from its parts' `blocks` in the manifest."""
    highest: dict[int, int] = {}
    for part in snapshot.manifest.tables.get(table, {}).get("parts", []):
        for chain, block in part["blocks"].items():
            highest[int(chain)] = max(block, highest.get(int(chain), block))
    return highest


@per_snapshot(kept=4, ahead=True)
def frontier(snapshot: Snapshot) -> dict[int, int]:
    """Each chain's highest block among the snapshot's pair trades: a chain's trades past it
    are not in the snapshot (a chain's events reach the lake in block order, and every one
    committed before the snapshot is in it)."""
    return _frontier(snapshot, "trades")


@per_snapshot(kept=4, ahead=True)
def wallet_frontier(snapshot: Snapshot) -> dict[int, int]:
    """The same for the snapshot's wallet trades."""
    return _frontier(snapshot, "wallet_trades")


def _past(rows: pl.DataFrame, frontier: dict[int, int], key: tuple[str, str],
          like: pl.Schema | None) -> Spans:
    """Rows past each chain's `frontier` block, by `key`, in the columns and types `like` of
    the serving table (when the snapshot has it) that lookups put them after."""
    past = rows.filter(pl.col("block_number") > reached(frontier))
    if like is not None:
        past = past.select([pl.col(c).cast(t) for c, t in like.items()])
    return sorted_spans(past, key)


def _view(tail: Tail, snapshot: Snapshot) -> LiveView | None:
    """What the tail adds to `snapshot` (each chain's trades past the snapshot's frontier);
    None when it reaches no further than the snapshot, or when it builds on a later snapshot
    (what lies between the two is in neither: the snapshot is served alone until the later
    one is loaded)."""
    as_of = as_of_instant(snapshot)
    if tail.since > as_of or tail.as_of <= as_of:
        return None
    trades = _past(tail.trades, frontier(snapshot), KEY, snapshot.schema("trades"))
    wallets = _past(tail.wallet_trades, wallet_frontier(snapshot), ("chain_id", "wallet"),
                    snapshot.schema("wallet_trades"))
    known = snapshot.tables.get("pairs")
    new = tail.new_pairs if known is None else tail.new_pairs.join(
        known.select("chain_id", address="pair"), on=["chain_id", "address"], how="anti")
    return LiveView(tail.seq, tail.as_of, trades, sorted_spans(tail.pairs, KEY), tail.chains,
                    new, wallets, tail.feeds, sorted_spans(tail.pair_figures, KEY),
                    sorted_spans(tail.tokens, ("chain_id", "address")))


class LiveTail:
    """The newest tail published, followed like LATEST; losing the store keeps the last one."""

    def __init__(self, store: ObjectStore,
                 on_new: Callable[[Tail], None] = lambda _: None) -> None:
        self.store = store
        # Called in the event loop with each new tail, the first included.
        self.on_new = on_new
        self.tail: Tail | None = None
        # The newest tail built on each recent snapshot: while the edge still serves an older
        # snapshot than the newest tail's, it goes on serving the tail built on it.
        self.tails: LruCache[Tail] = LruCache(4)
        self.last_check: float | None = None
        self.healthy = True
        self.loaded_at: float | None = None
        self._views: LruCache[LiveView | None] = LruCache(4)
        # Per snapshot, the newest tail whose view is made, and that view.
        self._ready: LruCache[tuple[int, LiveView | None]] = LruCache(4)
        self._changed: asyncio.Future[None] | None = None

    def refresh(self) -> bool:
        """Load the tail live/TAIL names if it is new; True when it changed."""
        try:
            pointer = read_pointer(self.store)
            self.healthy, self.last_check = True, time.time()
            if pointer is None or (self.tail is not None and self.tail.seq == pointer["seq"]):
                return False
            self.tail = load_tail(self.store, pointer)
            self.tails.pop(self.tail.snapshot_id)
            self.tails.put(self.tail.snapshot_id, self.tail)
        except (StoreUnavailable, OSError) as err:
            self.healthy = False
            log.warning("live tail unreachable, keeping seq %s: %s",
                        self.tail and self.tail.seq, err)
            return False
        except Exception as err:
            # A torn or unreadable tail is its writer's fault: keep serving the last one.
            log.warning("not following the live tail: %s", err)
            return False
        self.loaded_at = time.time()
        return True

    def _usable(self, snapshot: Snapshot) -> Tail | None:
        """The newest tail not built on a later snapshot than `snapshot`."""
        # A copy: the tails change under the thread that loads them.
        usable = [t for t in list(self.tails.values()) if t.since <= as_of_instant(snapshot)]
        return max(usable, key=lambda t: t.seq, default=None)

    def view(self, snapshot: Snapshot | None) -> LiveView | None:
        """What the newest usable tail adds to `snapshot`: the view made for it off the
        request path (`warm`), or, until one is, made here once per snapshot and tail."""
        if snapshot is None:
            return None
        ready = self._ready.get(snapshot.snapshot_id)
        if ready is not None:
            found: LiveView | None = ready[1]
            return found
        tail = self._usable(snapshot)
        if tail is None:
            return None
        key = (snapshot.snapshot_id, tail.seq)
        if key not in self._views:
            return self._views.put(key, _view(tail, snapshot))
        return self._views.get(key)

    def warm(self, snapshot: Snapshot | None) -> None:
        """Make the view of the newest usable tail for `snapshot` before requests are answered
        from it (until then they are from the view made before)."""
        if snapshot is None:
            return
        tail = self._usable(snapshot)
        ready = self._ready.get(snapshot.snapshot_id)
        if tail is None or (ready is not None and ready[0] == tail.seq):
            return
        view = _view(tail, snapshot)
        self._ready.put(snapshot.snapshot_id, (tail.seq, view))

    def changed(self) -> "asyncio.Future[None]":
        """Resolved when the next tail is loaded (streams wait on it)."""
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def _announce(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

    def age_seconds(self) -> float | None:
        """Seconds between the tail's watermark and now."""
        return None if self.tail is None else round(
            (datetime.now(UTC) - self.tail.as_of).total_seconds(), 1)

    async def follow(self, interval_s: float, holder: SnapshotHolder) -> None:
        """Poll live/TAIL forever (cancelled on shutdown); a tail built on a snapshot this edge
        has not loaded yet makes it read LATEST at once."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                if not await asyncio.wait_for(asyncio.to_thread(self.refresh),
                                              holder.timeout_s):
                    continue
                tail, current = self.tail, holder.current
                if tail is not None:
                    self.on_new(tail)
                if tail is not None and current is not None and (
                        tail.since > as_of_instant(current)):
                    await asyncio.wait_for(asyncio.to_thread(holder.refresh), holder.timeout_s)
                await asyncio.to_thread(self.warm, holder.current)
                self._announce()
            except TimeoutError:
                self.healthy = False
            except Exception:
                log.exception("following the live tail failed; retrying")


def live_trades(snapshot: Snapshot, view: LiveView | None, key: PairKey,
                since: int | None = None) -> pl.DataFrame:
    """A pair's trade rows from the snapshot followed by those that arrived after it (`since`:
    of the snapshot's parts that may hold rows at or after that second only)."""
    return followed(trades_of(snapshot).rows(key, since),
                    None if view is None else view.trades.rows(key))


def last_rows(past: Spans, newer: pl.DataFrame | None, key: Any, count: int) -> pl.DataFrame:
    """A key's last `count` rows: the live tail's (`newer`), after the snapshot's parts read
    from the newest back only as far as they are needed (a first page, not a history)."""
    fresh = 0 if newer is None else newer.height
    return followed(past.tail(key, max(count - fresh, 0)), newer).tail(count)


def tail_held(rows_of: Callable[["LiveView"], Spans],
              columns: tuple[str, ...]) -> Callable[[Request, Params], Hashable]:
    """What the live tail holds of the asked chain's address's rows (`rows_of` the tail), as
    the tuples of their `columns` (places and hashes); None without a tail. A page of them is
    the same for every tail holding the same rows."""
    def held(request: Request, params: Params) -> Hashable:
        view: LiveView | None = request.state.live
        if view is None:
            return None
        rows = rows_of(view).rows((params["chain"].chain_id, params["address"]))
        # Read in Python: a polars hash of the rows waits for its thread pool, which the
        # tail's and the snapshot's loading keep busy.
        return tuple(zip(*(rows[c].to_list() for c in columns), strict=True))
    return held


def followed(rows: pl.DataFrame, newer: pl.DataFrame | None) -> pl.DataFrame:
    """A serving table's rows followed by the tail's (`newer`, in the table's columns and
    types, as a view holds them)."""
    if newer is None or newer.is_empty():
        return rows
    return pl.concat([rows, newer])


# Per snapshot, tail and pair, its row as served.
_rows: LruCache[bytes] = LruCache(4096)


@per_snapshot(kept=4, ahead=True)
def pair_rows(snapshot: Snapshot) -> Spans:
    """The snapshot's pair rows, found by (chain id, address) in the mapped table: a dict of
    every row's item held each snapshot's items as strings of its own (~45 MB at 10M swaps)."""
    rows = snapshot.tables.get("pairs")
    if rows is None:
        rows = pl.DataFrame(schema={"chain_id": pl.Int64, "pair": pl.String, "item": pl.String})
    return frame_spans(rows.select("chain_id", "pair", "item"), ("chain_id", "pair"))


def pair_row(snapshot: Snapshot, key: PairKey) -> str | None:
    """A pair's row as the snapshot has it, or None when the snapshot has no such pair."""
    found = pair_rows(snapshot).row(key)
    return None if found is None else str(found["item"])


def _patched(row: dict[str, Any], view: LiveView, key: PairKey) -> bytes:
    """The snapshot's pair row (decoded) with its live figures and valued reserves."""
    figures = view.figures.row(key)
    if figures is not None:
        row.update(orjson.loads(figures["fields"]))
        row["last_trade_at"] = figures["last_trade_at"]
        row["status"] = figures["status"]
    row["last_updated_at"] = iso_text(view.as_of)
    state = view.pairs.row(key)
    if state is not None:
        row["liquidity_usd"] = state["liquidity_usd"]
        row["price_native"] = state["base_price_native"]
        base, quote = row["tokens"]
        base["price_usd"], base["price_native"] = state["price_usd"], state["base_price_native"]
        quote["price_usd"], quote["price_native"] = state["quote_usd"], state["quote_price_native"]
        pad = row.get("launchpad")
        if pad and pad.get("stage") == "curve" and pad.get("graduation_quote"):
            # As `figures.pair_rows.curve_progress` has it, from the live quote reserve.
            held = (state["quote_reserve"] or 0.0) / pad["graduation_quote"]
            pad["progress"] = min(1.0, max(0.0, held))
            pad["graduation_usd"] = (None if state["quote_usd"] is None
                                     else pad["graduation_quote"] * state["quote_usd"])
    return orjson.dumps(row)


def live_pair_item(snapshot: Snapshot, view: LiveView, key: PairKey, item: str) -> bytes:
    """A pair row (the snapshot's JSON `item`) as of the tail's watermark: the window figures
    the tail's writer made when its windows moved (windows, txn, volume, price change, last
    trade), its liquidity and token prices. A perp market's row is the snapshot's (its
    figures come from its own feed, not from swaps)."""
    memo = (snapshot.snapshot_id, view.seq, key)
    found = _rows.get(memo)
    if found is not None:
        return found
    row: dict[str, Any] = orjson.loads(item)
    if row["prop_data"]["is_perp"]:
        return item.encode()
    made = _patched(row, view, key)
    _rows.put(memo, made)
    return made
