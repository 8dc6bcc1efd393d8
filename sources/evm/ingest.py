"""The EVM follower: reads a chain's pools over JSON-RPC and writes the lake's tables through
the lake's contract, a batch of blocks at a time.

A batch replaces its block range in every event table (so ingesting a range again changes
nothing) and is marked only when every table is committed: a follower killed at any moment
rolls the unmarked tables back when it starts again and goes on from the last marked block.
Each batch's first block must name, as its parent, the hash kept for the block before it; when
it does not, the follower walks back to the newest kept block the node still has and writes
again from there, so the orphaned blocks' rows leave the lake in the commits that add the
canonical ones.

Its parts: where it stands (`cursor`), what it reads of the node (`blocks`), the pools and
tokens it finds (`discovery`), the rows it makes of their logs (`rows`) and their prices
(`pricing`); this module runs the batches and commits them."""

import time
from collections.abc import Callable
from datetime import UTC, datetime

import polars as pl

from core.renewal import Renewal
from sources.evm.blocks import Blocks, ChainMoved, block_time, log_block, same_chain
from sources.evm.config import IngestConfig
from sources.evm.cursor import (
    WRITER,
    Batch,
    ChainCursor,
    begin,
    chains_of,
    marked,
    node_state,
    undo_unmarked,
    unreachable,
)
from sources.evm.discovery import TRANSFER, Known, launchpad_id
from sources.evm.families import FAMILIES
from sources.evm.honeypot import UPGRADED
from sources.evm.ownership import OWNERSHIP_TRANSFERRED
from sources.evm.pricing import Pricing
from sources.evm.rows import EVENT_TABLES, BatchRows
from sources.evm.rpc import Rpc, RpcUnreachable, quantity
from sources.hermes import Hermes
from sources.lake import LakeError, LakeWriter, Progress, table_frame

# How often the chain's head is recorded in the `heads` table, and a batch said at the head.
HEAD_EVERY_S = 60.0
# How long a follower waits before asking a node that did not answer again (each ask retries
# for ~20 s itself).
UNREACHABLE_WAIT_S = 10.0


class Follower:
    """Follows one chain into one lake (the lake's only writer)."""

    def __init__(self, rpc: Rpc, config: IngestConfig, lake: LakeWriter, cursor: ChainCursor,
                 known: Known, pricing: Pricing, confirmations: int = 12,
                 batch_blocks: int = 1_000,
                 progress: Callable[[str], None] = lambda _: None) -> None:
        """A follower of the chain standing at `cursor`, knowing its pools as `known` and
        pricing them by `pricing` (`open` makes one from the node and the lake)."""
        self.blocks = Blocks(rpc)
        self.config, self.lake, self.cursor = config, lake, cursor
        self.chain_id = cursor.chain_id
        self.known, self.pricing, self.hermes = known, pricing, pricing.hermes
        self.rows = BatchRows(self.chain_id, known, self.blocks)
        self.confirmations, self.batch_blocks, self.progress = confirmations, batch_blocks, progress
        self.last_head_at = 0.0
        # What the chain's own tables hold, as this follower last wrote or read them (only
        # those the lake has).
        self.written: dict[str, pl.DataFrame] = {}
        self.block_time_ms = config.chain.block_time_ms
        # Since when the node has not answered (None while it answers).
        self.down_since: datetime | None = None

    @classmethod
    def open(cls, rpc: Rpc, config: IngestConfig, lake: LakeWriter, confirmations: int = 12,
             batch_blocks: int = 1_000, from_block: int | None = None,
             progress: Callable[[str], None] = lambda _: None,
             hermes: Hermes | None = None) -> "Follower":
        """A follower of the node's chain into `lake`: asks the node which chain it serves,
        refuses a lake another writer keeps, undoes a batch begun and not marked, and goes on
        from where the lake's mark says its chain stands (or `from_block`, to read a range
        again), knowing what the lake holds of the chain. Several chains' followers share a
        lake, each committing under its lock."""
        if config.hermes_ids and hermes is None:
            raise LakeError("the venues file prices a quote by a Hermes feed: name the Hermes "
                            "upstream (--hermes URL)")
        chain_id = quantity(rpc.call("eth_chainId"))
        # A quote's aggregator that is none is refused before anything is written.
        pricing = Pricing(chain_id, config, hermes)
        pricing.own_feeds(rpc)
        with lake.writing():
            mark = lake.progress()
            if mark is not None and mark.writer != WRITER:
                raise LakeError(f"{lake.root} is written by {mark.writer!r}: an ingest follows "
                                "chains into a lake of its own (set CHAINTAPE_LAKE or --lake)")
            undo_unmarked(lake, mark)
        start = 0 if from_block is None else from_block
        own = None if mark is None else chains_of(mark.meta).get(str(chain_id))
        if own is None:
            cursor = ChainCursor(chain_id, start, start, start)
        else:
            cursor = ChainCursor.from_meta(own)
            if from_block is not None and from_block < cursor.next_block:
                cursor.next_block = from_block
                cursor.first_block = min(cursor.first_block, from_block)
        known = Known.read(lake, chain_id, config)
        pricing.derived_below(lake, cursor.next_block, known.tokens)
        follower = cls(rpc, config, lake, cursor, known, pricing, confirmations, batch_blocks,
                       progress)
        follower.written = {name: frame for name, frame in zip(
            ("pairs", "tokens", "lp_locks"), known.frames(), strict=True)
            if lake.version(name) is not None}
        return follower

    @property
    def rpc(self) -> Rpc:
        """The node's JSON-RPC client."""
        return self.blocks.rpc

    @rpc.setter
    def rpc(self, rpc: Rpc) -> None:
        self.blocks.rpc = rpc

    def close(self) -> None:
        """Let go of the node and the Hermes stream."""
        if self.hermes is not None:
            self.hermes.stop()
        self.rpc.close()

    def run(self, to_block: int | None = None, follow: bool = False, poll_s: float = 2.0,
            stop: Callable[[], bool] = lambda: False,
            renewal: Renewal | None = None) -> list[Batch]:
        """Ingest up to `to_block` (or the head), then, with `follow`, keep following the head
        until `stop` says so, renewed in place by `renewal` between two batches when it is due.
        Returns the batches written, but none while following (it runs for days)."""
        done: list[Batch] = []
        said = 0.0
        while not stop():
            if renewal is not None:
                renewal.step(self.close)
            try:
                said = self._run_once(to_block, follow, poll_s, done, said)
            except RpcUnreachable as err:
                if not follow:
                    raise
                # Following, a node that stops answering is said on /status (through the
                # lake's mark) and asked again until it answers.
                self.down_since = self.down_since or datetime.now(UTC)
                node_state(self.lake, self.chain_id, unreachable(err, self.down_since))
                self.progress(f"the node does not answer ({err}); asking again in "
                              f"{UNREACHABLE_WAIT_S:g}s")
                self._wait(UNREACHABLE_WAIT_S)
            else:
                if said < 0:
                    break
        return done

    def _run_once(self, to_block: int | None, follow: bool, poll_s: float, done: list[Batch],
                  said: float) -> float:
        """One look at the head and the batch it calls for; returns when a batch was last
        said, or -1 when the run is over."""
        head = quantity(self.rpc.call("eth_blockNumber"))
        if self.down_since is not None:
            self.down_since = None
            node_state(self.lake, self.chain_id, None)
        seen_at = datetime.now(UTC)
        target = head if to_block is None else min(head, to_block)
        if self.cursor.next_block > target:
            if not follow or (to_block is not None and self.cursor.next_block > to_block):
                return -1
            if self.hermes is not None and self.hermes.pending(int(seen_at.timestamp())):
                self.flush(head, seen_at)
            self._wait(poll_s)
            return said
        batch = self.step(min(self.cursor.next_block + self.batch_blocks - 1, target), head,
                          seen_at)
        if not follow:
            done.append(batch)
        # Every batch is said, the last (partial) one included; following the head, once a
        # minute there.
        if not follow or batch.last < head or time.monotonic() - said >= HEAD_EVERY_S:
            self.progress(batch.said())
            said = time.monotonic()
        return said

    def step(self, last: int, head: int, seen_at: datetime | None = None,
             tries: int = 3) -> Batch:
        """Ingest [next block, last] (from the fork point after a reorg) and mark it; a batch
        whose blocks changed while they were read is read again. `seen_at` is when `head` was
        the head: a batch that reaches it is complete up to then (no later block existed)."""
        for attempt in range(tries):
            known = (self.known.frames(), dict(self.cursor.hashes),
                     self.pricing.derivation.copy(), dict(self.known.tested))
            try:
                return self._step(last, head, seen_at or datetime.now(UTC))
            except ChainMoved:
                frames, self.cursor.hashes, self.pricing.derivation, self.known.tested = known
                self.known.restore(frames)
                if attempt == tries - 1:
                    raise
        raise AssertionError("unreachable")

    def _step(self, last: int, head: int, seen_at: datetime) -> Batch:
        began = time.perf_counter()
        asked = self.cursor.next_block
        blocks, known = self.blocks, self.known
        first, headers = blocks.linked(asked, last, self.cursor.hashes)
        reorged = first if first < asked else None
        if reorged is not None:
            self._forget(first)
        pools = known.new_pools(blocks, first, last)
        if self.cursor.first_block > 0:
            # A lake begun past the chain's start meets its factories' earlier pools as they
            # swap.
            pools += known.earlier_pools(blocks, first, last)
        new_tokens = known.new_tokens(blocks, pools)
        pool_logs = known.pool_logs(blocks, first, last)
        # A token's transfers, its owner's changes and its code's, in one read.
        transfers = blocks.logs(first, last, known.transferred(),
                                [[TRANSFER, OWNERSHIP_TRANSFERRED, UPGRADED]])
        transfers += known.backfill(blocks, new_tokens, first, self.cursor.first_block)
        same_chain(pool_logs + transfers, headers, first)
        times = {n: block_time(h) for n, h in headers.items()}
        times.update(blocks.times({log_block(x) for x in transfers} - set(times)))
        rows = self.rows.rows(pool_logs, transfers, times,
                              {n: len(h.get("transactions") or ()) for n, h in headers.items()},
                              first, last)
        rows["ownership"] = pl.concat([rows["ownership"], known.owners(
            blocks, new_tokens, last, times[last])])
        # Tested when met, when its owner or its code changed, and again as it trades.
        changed = {log["address"].lower() for log in transfers if log["topics"][0] == UPGRADED}
        changed |= set(rows["ownership"].filter(pl.col("source") == "event")["token"])
        traded = known.pool_tokens(set(rows["swaps"]["pair"]))
        rows["honeypot_tests"] = known.honeypot_tests(
            blocks, changed | {f.address for f in new_tokens},
            {t for pair in traded.values() for t in pair}, last, times[last])
        # The lake is complete up to the last block's time, or, at the head, up to when the head
        # was seen.
        watermark = max(times[last], seen_at) if last >= head else times[last]
        priced = {times[last], *(t for name in ("swaps", "reserves", "liquidity_events")
                                 for t in rows[name]["block_time"])}
        pricing = self.pricing
        sourced = pl.concat([
            pricing.rounds(self.rpc, self.lake, first, last, times, self.cursor.first_block),
            pricing.hermes_updates(self.rpc, priced, watermark)])
        rows["oracle_updates"] = pl.concat([sourced, pricing.derived(
            self.lake, known, rows["reserves"], times, sourced, first)])
        # A reorg's orphaned blocks leave in the commits that write the canonical ones.
        upto = last if reorged is None else max(last, self.cursor.end_block - 1)
        head_time = blocks.head_time(head, headers)
        with self.lake.writing():
            mark = begin(self.lake, self.chain_id)
            rows["oracle_updates"] = pricing.unheld(self.lake, rows["oracle_updates"])
            self._write(rows, first, upto, fresh=first >= self.cursor.end_block, head=head,
                        head_time=head_time, last=last, times=times, watermark=watermark)
            self.cursor.advance(headers, last, reorged, self.confirmations)
            self._marked(watermark, head, mark)
        return Batch(first, last, {k: v.height for k, v in rows.items()}, reorged, head,
                     time.perf_counter() - began, len(pool_logs) + len(transfers))

    def _forget(self, first: int) -> None:
        """Drop what the orphaned blocks from `first` on had made known."""
        self.known.forget(first)
        self.cursor.hashes = {n: h for n, h in self.cursor.hashes.items() if n < first}
        self.pricing.derived_below(self.lake, first, self.known.tokens)

    def _write(self, rows: dict[str, pl.DataFrame], first: int, upto: int, fresh: bool,
               head: int, head_time: datetime, last: int, times: dict[int, datetime],
               watermark: datetime) -> None:
        """Commit the batch, table by table (the mark that follows makes it visible); its
        head observation is as of the batch's watermark."""
        lake, cid, known = self.lake, self.chain_id, self.known
        chained = self.pricing.chained_feeds()
        own = pl.col("feed_id").is_in(chained)
        updates = rows["oracle_updates"].filter(own)
        ranged = pl.col("slot") >= first
        if not fresh or not updates.filter(ranged).is_empty():
            # The chain's own feeds' updates of the range, each keyed by the block that set
            # it: a reorg's orphaned answers leave with it, and those of earlier blocks stay.
            feeds = ", ".join(f"'{f}'" for f in chained) or "''"
            lake.replace("oracle_updates", updates.filter(ranged),
                         f"feed_id IN ({feeds}) AND slot >= {first} AND slot <= {upto}")
        # The rounds in force before the range, that the lake did not hold yet.
        self._append_updates(updates.filter(~ranged))
        self._append_updates(rows["oracle_updates"].filter(~own))
        catalog = pl.concat([self.pricing.feeds_of(self.rpc), table_frame(
            "oracle_feeds", self.pricing.derivation.catalog(
                dict(zip(known.tokens["address"], known.tokens["symbol"], strict=True))))])
        for name, frame in (("oracle_feeds", catalog), ("chains", self._chain_row(times)),
                            ("venues", self._venue_rows()), ("tokens", known.tokens),
                            ("pairs", known.pairs), ("lp_locks", known.locks)):
            # These change rarely: committed only when they do.
            kept = self.written.get(name)
            if kept is not None and kept.equals(frame):
                continue
            if name == "oracle_feeds":
                # The lake's feeds are every chain's: this chain's own are replaced.
                named = ", ".join(f"'{f}'" for f in sorted(frame["feed_id"])) or "''"
                lake.replace(name, frame, f"feed_id IN ({named})")
            else:
                lake.replace(name, frame, f"chain_id = {cid}")
            self.written[name] = frame
        where = f"chain_id = {cid} AND block_number >= {first} AND block_number <= {upto}"
        for name in EVENT_TABLES:
            frame = rows[name]
            if fresh and frame.is_empty():
                continue
            if fresh:
                lake.append(name, frame)
            else:
                lake.replace(name, frame, where)
        if time.monotonic() - self.last_head_at >= HEAD_EVERY_S or last >= head:
            lake.append("heads", table_frame("heads", [{
                "chain_id": cid, "observed_at": watermark, "indexed_block": last,
                "indexed_block_time": times[last], "head_block": max(head, last),
                "head_block_time": max(head_time, times[last])}]))
            self.last_head_at = time.monotonic()

    def _append_updates(self, updates: pl.DataFrame) -> None:
        """Add updates that no range's rewrite covers: the Hermes feeds', and rounds in force
        before a range."""
        if not updates.is_empty():
            self.lake.append("oracle_updates", updates)

    def flush(self, head: int, seen_at: datetime) -> None:
        """Commit and mark the Hermes stream's updates received while no block came: the lake
        is complete up to `seen_at`, when `head` was the head and every block to it was read."""
        found = self.pricing.hermes_updates(self.rpc, set(), seen_at)
        with self.lake.writing():
            mark = begin(self.lake, self.chain_id)
            self._append_updates(self.pricing.unheld(self.lake, found))
            self._marked(seen_at, head, mark)

    def _marked(self, watermark: datetime, head: int, mark: Progress | None) -> None:
        """Mark what was committed; the Hermes updates it holds are the lake's from now on."""
        marked(self.lake, self.cursor, self.confirmations, watermark, head, mark)
        if self.hermes is not None:
            self.hermes.forget(int(watermark.timestamp()))

    def _wait(self, seconds: float) -> None:
        """Until the next look at the head: `seconds`, or less when the Hermes stream brings an
        update (committed with the head seen then)."""
        if self.hermes is None:
            time.sleep(seconds)
            return
        self.hermes.arrived.clear()
        self.hermes.arrived.wait(seconds)

    def _chain_row(self, times: dict[int, datetime]) -> pl.DataFrame:
        chain = self.config.chain
        if self.block_time_ms is None and len(times) > 1:
            numbers = sorted(times)
            span = (times[numbers[-1]] - times[numbers[0]]).total_seconds()
            if span > 0:
                self.block_time_ms = max(1, round(1000 * span / (numbers[-1] - numbers[0])))
        return table_frame("chains", [{
            "chain_id": self.chain_id, "slug": chain.slug, "display_name": chain.display_name,
            "address_format": "evm", "explorer_url": chain.explorer_url,
            "native_symbol": chain.native_symbol, "native_token": chain.native_token,
            "block_time_ms": self.block_time_ms or 1_000,
            "min_liquidity_usd": chain.min_liquidity_usd}])

    def _venue_rows(self) -> pl.DataFrame:
        rows = []
        for v in self.known.venues.values():
            rows.append({"chain_id": self.chain_id, "venue_id": v.venue_id, "name": v.name,
                         "category": "dex", "factory": v.factory,
                         "factory_type": FAMILIES[v.family].factory_type, "router": v.router})
            if v.launchpad:
                rows.append({"chain_id": self.chain_id, "venue_id": launchpad_id(v),
                             "name": f"{v.name} Launchpad", "category": "launchpad",
                             "factory": v.launchpad, "factory_type": "launchpad",
                             "router": ""})
        return table_frame("venues", rows)
