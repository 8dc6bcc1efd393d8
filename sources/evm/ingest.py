"""The EVM follower: reads a chain's pools over JSON-RPC and writes the lake's tables through
the lake's contract, a batch of blocks at a time.

A batch replaces its block range in every event table (so ingesting a range again changes
nothing) and is marked only when every table is committed: a follower killed at any moment
rolls the unmarked tables back when it starts again and goes on from the last marked block.
Each batch's first block must name, as its parent, the hash kept for the block before it; when
it does not, the follower walks back to the newest kept block the node still has and writes
again from there, so the orphaned blocks' rows leave the lake in the commits that add the
canonical ones."""

import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl

from core.renewal import Renewal
from sources.evm.config import IngestConfig, VenueConfig
from sources.evm.derived import Derivation, Prices, derived_feed_id
from sources.evm.families import (
    FAMILIES,
    Family,
    Liquidity,
    Pool,
    Price,
    Reserves,
    SwapEvent,
    decoded,
    topic,
    topic_address,
)
from sources.evm.prices import PriceSources
from sources.evm.rpc import Rpc, RpcError, RpcUnreachable, quantity
from sources.evm.tokens import TokenFacts, describe, gas, number, text
from sources.hermes import Hermes
from sources.lake import Lake, LakeError, Progress, table_frame

WRITER = "evm"
TRANSFER = topic("Transfer(address,address,uint256)")
ZERO = "0x" + "0" * 40
DEAD = "0x000000000000000000000000000000000000dead"
# Addresses named in one eth_getLogs filter; more are asked in several.
ADDRESSES_PER_QUERY = 500
# Calls in one JSON-RPC batch request.
CALLS_PER_BATCH = 200
# The block hashes kept for finding a reorg's fork point: at least this many, and twice the
# confirmation depth.
KEPT_HASHES = 64
# How often the chain's head is recorded in the `heads` table.
HEAD_EVERY_S = 60.0
# The lake keeps raw amounts as decimal(38, 0); a larger amount cannot be stored exactly.
MAX_RAW = 10**38 - 1
# ERC-20 `balanceOf(address)`, a V3 pool's `slot0()`, an ERC-721 `ownerOf(uint256)`, and a V3
# position manager's events.
BALANCE_OF = "0x70a08231"
SLOT0 = "0x3850c7bd"
OWNER_OF = "0x6352211e"
INCREASE_LIQUIDITY = topic("IncreaseLiquidity(uint256,uint128,uint256,uint256)")
DECREASE_LIQUIDITY = topic("DecreaseLiquidity(uint256,uint128,uint256,uint256)")
# What a node answers for a method it does not have.
UNSUPPORTED = re.compile(r"not (found|supported|available|exist)|unsupported|unknown method|"
                         r"does not exist|method .*not", re.IGNORECASE)
# How long a follower waits before asking a node that did not answer again (each ask retries
# for ~20 s itself).
UNREACHABLE_WAIT_S = 10.0
# The tables a batch rewrites by block range, in commit order.
EVENT_TABLES = ("transfers", "liquidity_events", "reserves", "swaps", "blocks")


class ChainMoved(LakeError):
    """The node's chain changed while a batch was read."""


@dataclass
class Cursor:
    """Where the follower stands: the next block to read, the first it read, the block after
    the highest it wrote (above the next block while a range is read again), and the hashes
    of the newest blocks it wrote (to find a reorg's fork point)."""

    chain_id: int
    first_block: int
    next_block: int
    end_block: int
    hashes: dict[int, str] = field(default_factory=dict)
    step: int = 0

    def as_meta(self, head: int, confirmations: int) -> dict[str, Any]:
        """The cursor as the lake's progress mark records it."""
        return {"chain_id": self.chain_id, "first_block": self.first_block,
                "next_block": self.next_block, "end_block": self.end_block, "step": self.step,
                "head_block": head,
                "confirmed_through": max(-1, min(head - confirmations, self.next_block - 1)),
                "hashes": {str(n): h for n, h in sorted(self.hashes.items())}}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> "Cursor":
        """The cursor a progress mark recorded."""
        return cls(int(meta["chain_id"]), int(meta["first_block"]), int(meta["next_block"]),
                   int(meta["end_block"]), {int(n): str(h) for n, h in meta["hashes"].items()},
                   int(meta["step"]))


@dataclass(frozen=True)
class Batch:
    """What one batch wrote."""

    first: int
    last: int
    rows: dict[str, int]
    reorged_from: int | None
    head: int
    seconds: float
    logs: int


class Follower:
    """Follows one chain into one lake (the lake's only writer)."""

    def __init__(self, rpc: Rpc, config: IngestConfig, lake: Lake, chain_id: int,
                 cursor: Cursor, confirmations: int = 12, batch_blocks: int = 1_000,
                 progress: Callable[[str], None] = lambda _: None,
                 hermes: Hermes | None = None) -> None:
        """A follower of chain `chain_id` standing at `cursor` (`open` makes one from the node
        and the lake), its Hermes feeds read from `hermes`."""
        self.rpc, self.config, self.lake, self.hermes = rpc, config, lake, hermes
        self.confirmations, self.batch_blocks, self.progress = confirmations, batch_blocks, progress
        self.chain_id, self.cursor = chain_id, cursor
        self.venues: dict[str, VenueConfig] = {v.factory: v for v in config.venues}
        self.launchpads = {v.launchpad: v for v in config.venues if v.launchpad}
        self.prices = PriceSources(chain_id, config.quotes)
        self.feeds = {q.token: q.feed_id(chain_id) for q in config.quotes}
        # The feeds whose updates are the chain's own (read with its blocks, rolled back with
        # them): its aggregators' and its pegs'.
        self.chain_feeds = sorted(q.feed_id(chain_id) for q in config.quotes
                                  if q.hermes_id is None)
        chain = pl.col("chain_id") == self.chain_id
        self.pairs = lake.scan("pairs").filter(chain).collect()
        self.tokens = lake.scan("tokens").filter(chain).collect()
        self.locks = lake.scan("lp_locks").filter(chain).collect()
        self.last_head_at = 0.0
        # What the chain's own tables hold, as this follower last wrote or read them (only
        # those the lake has).
        self.written: dict[str, pl.DataFrame] = {
            name: frame for name, frame in (("tokens", self.tokens), ("pairs", self.pairs),
                                            ("lp_locks", self.locks))
            if lake.version(name) is not None}
        self.block_time_ms = config.chain.block_time_ms
        # The quote tokens' feeds, asked of the node with the first batch.
        self.catalog: pl.DataFrame | None = None
        # Whether the node answers `eth_getBlockReceipts` (until it says it does not).
        self.block_receipts = True
        self.derivation = Derivation(chain_id, config.chain.derive_min_liquidity_usd)
        self._derived_below(cursor.next_block)
        # Since when the node has not answered (None while it answers).
        self.down_since: datetime | None = None

    @classmethod
    def open(cls, rpc: Rpc, config: IngestConfig, lake: Lake, confirmations: int = 12,
             batch_blocks: int = 1_000, from_block: int | None = None,
             progress: Callable[[str], None] = lambda _: None,
             hermes: Hermes | None = None) -> "Follower":
        """A follower of the node's chain into `lake`: asks the node which chain it serves,
        refuses a lake another writer keeps, undoes a batch begun and not marked, and goes on
        from where the lake's mark says its chain stands (or `from_block`, to read a range
        again). Several chains' followers share a lake, each committing under its lock."""
        if config.hermes_ids and hermes is None:
            raise LakeError("the venues file prices a quote by a Hermes feed: name the Hermes "
                            "upstream (--hermes URL)")
        chain_id = quantity(rpc.call("eth_chainId"))
        # A quote's aggregator that is none is refused before anything is written.
        PriceSources(chain_id, config.quotes).feeds(rpc)
        with lake.writing():
            mark = lake.progress()
            if mark is not None and mark.writer != WRITER:
                raise LakeError(f"{lake.root} is written by {mark.writer!r}: an ingest follows "
                                "chains into a lake of its own (set CHAINTAPE_LAKE or --lake)")
            begun(lake, mark)
        start = 0 if from_block is None else from_block
        own = None if mark is None else chains_of(mark.meta).get(str(chain_id))
        if own is None:
            cursor = Cursor(chain_id, start, start, start)
        else:
            cursor = Cursor.from_meta(own)
            if from_block is not None and from_block < cursor.next_block:
                cursor.next_block = from_block
                cursor.first_block = min(cursor.first_block, from_block)
        return cls(rpc, config, lake, chain_id, cursor, confirmations, batch_blocks, progress,
                   hermes)

    def close(self) -> None:
        """Let go of the node and the Hermes stream."""
        if self.hermes is not None:
            self.hermes.stop()
        self.rpc.close()

    @property
    def pools(self) -> dict[str, str]:
        """Every known pool and its factory."""
        return dict(zip(self.pairs["address"], self.pairs["factory"], strict=True))

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
            self.progress(_said(batch))
            said = time.monotonic()
        return said

    def step(self, last: int, head: int, seen_at: datetime | None = None,
             tries: int = 3) -> Batch:
        """Ingest [next block, last] (from the fork point after a reorg) and mark it; a batch
        whose blocks changed while they were read is read again. `seen_at` is when `head` was
        the head: a batch that reaches it is complete up to then (no later block existed)."""
        for attempt in range(tries):
            known = (self.pairs, self.tokens, self.locks, dict(self.cursor.hashes),
                     self.derivation.copy())
            try:
                return self._step(last, head, seen_at or datetime.now(UTC))
            except ChainMoved:
                (self.pairs, self.tokens, self.locks, self.cursor.hashes,
                 self.derivation) = known
                if attempt == tries - 1:
                    raise
        raise AssertionError("unreachable")

    def _step(self, last: int, head: int, seen_at: datetime) -> Batch:
        began = time.perf_counter()
        asked = self.cursor.next_block
        first, headers = self._linked(asked, last)
        reorged = first if first < asked else None
        if reorged is not None:
            self._forget(first)
        new_pools = self._new_pools(first, last)
        new_tokens = self._new_tokens(new_pools)
        pool_logs = self._logs(first, last, list(self.pools), self._pool_topics())
        transfers = self._logs(first, last, self._transferred(), [TRANSFER])
        transfers += self._backfill(new_tokens, first)
        _same_chain(pool_logs + transfers, headers, first)
        times = {n: _time(h) for n, h in headers.items()}
        times.update(self._times({log_block(x) for x in transfers} - set(times)))
        rows = self._rows(pool_logs, transfers, times,
                          {n: len(h.get("transactions") or ()) for n, h in headers.items()},
                          first, last)
        # The lake is complete up to the last block's time, or, at the head, up to when the head
        # was seen.
        watermark = max(times[last], seen_at) if last >= head else times[last]
        priced = {times[last], *(t for name in ("swaps", "reserves", "liquidity_events")
                                 for t in rows[name]["block_time"])}
        sourced = pl.concat([self._prices(first, last, times),
                             self._hermes_updates(priced, watermark)])
        rows["oracle_updates"] = pl.concat([sourced, self._derived(rows["reserves"], times,
                                                                   sourced, first)])
        # A reorg's orphaned blocks leave in the commits that write the canonical ones.
        upto = last if reorged is None else max(last, self.cursor.end_block - 1)
        head_time = self._head_time(head, headers)
        with self.lake.writing():
            mark = self._begin()
            rows["oracle_updates"] = self._unheld(rows["oracle_updates"])
            self._write(rows, first, upto, fresh=first >= self.cursor.end_block, head=head,
                        head_time=head_time, last=last, times=times, watermark=watermark)
            self._advance(headers, last, reorged)
            self._marked(watermark, head, mark)
        return Batch(first, last, {k: v.height for k, v in rows.items()}, reorged, head,
                     time.perf_counter() - began, len(pool_logs) + len(transfers))

    def _advance(self, headers: dict[int, dict], last: int, reorged: int | None) -> None:
        """The cursor past a batch's blocks, their hashes kept."""
        for n, h in headers.items():
            self.cursor.hashes[n] = h["hash"]
        keep = max(KEPT_HASHES, 2 * self.confirmations)
        self.cursor.hashes = dict(sorted(self.cursor.hashes.items())[-keep:])
        self.cursor.next_block = last + 1
        self.cursor.end_block = last + 1 if reorged is not None else max(self.cursor.end_block,
                                                                         last + 1)

    def _begin(self) -> Progress | None:
        """Under the writers' lock: undo what a batch whose writer died left unmarked, then
        say in the mark that this chain's batch is being written (so that, should this writer
        die, the next holder of the lock undoes it)."""
        mark = self.lake.progress()
        begun(self.lake, mark)
        if mark is None:
            return None
        return self.lake.mark(mark.watermark, WRITER, mark.step,
                              {**mark.meta, "writing": self.chain_id})

    def _linked(self, first: int, last: int) -> tuple[int, dict[int, dict]]:
        """The headers of [first, last], each naming the one before as its parent and the
        first naming the kept hash of the block before it; `first` moves back to a reorg's
        fork point when the node's chain no longer holds the kept one."""
        for _ in range(8):
            headers = self._headers(range(first, last + 1))
            kept = self.cursor.hashes.get(first - 1)
            if kept is not None and headers[first]["parentHash"] != kept:
                first = self._fork_point(first - 1) + 1
                continue
            if all(headers[n]["parentHash"] == headers[n - 1]["hash"]
                   for n in range(first + 1, last + 1)):
                return first, headers
        raise ChainMoved(f"the node's chain kept changing under blocks {first}..{last}")

    def _fork_point(self, below: int) -> int:
        """The newest kept block at or below `below` whose hash the node still has."""
        kept = sorted((n for n in self.cursor.hashes if n <= below), reverse=True)
        now = self._headers(kept)
        for n in kept:
            if now[n]["hash"] == self.cursor.hashes[n]:
                return n
        raise LakeError(f"a reorg deeper than the {len(kept)} blocks whose hashes are kept "
                        f"(below block {below}): ingest again with --from-block")

    def _headers(self, numbers: Iterable[int]) -> dict[int, dict]:
        return self._each("eth_getBlockByNumber", list(numbers), lambda n: [hex(n), False],
                          "block")

    def _each(self, method: str, keys: list, params: Callable[[Any], list],
              what: str) -> dict:
        """`method` for each key, CALLS_PER_BATCH to a request; a key the node has nothing
        for is an error."""
        found = {}
        chunks = [keys[i:i + CALLS_PER_BATCH] for i in range(0, len(keys), CALLS_PER_BATCH)]
        answered = self.rpc.batches([[(method, params(k)) for k in chunk] for chunk in chunks])
        for chunk, answers in zip(chunks, answered, strict=True):
            for key, answer in zip(chunk, answers, strict=True):
                if answer is None:
                    raise LakeError(f"the node has no {what} {key}")
                found[key] = answer
        return found

    def _times(self, numbers: set[int]) -> dict[int, datetime]:
        return {n: _time(h) for n, h in self._headers(sorted(numbers)).items()}

    def _head_time(self, head: int, headers: dict[int, dict]) -> datetime:
        return _time(headers.get(head) or self._headers([head])[head])

    def _forget(self, first: int) -> None:
        """Drop what the orphaned blocks from `first` on had made known."""
        self.pairs = self.pairs.filter(pl.col("created_block") < first)
        self.locks = self.locks.filter(pl.col("block_number") < first)
        held = set(self.pairs["token0"]) | set(self.pairs["token1"])
        self.tokens = self.tokens.filter(pl.col("address").is_in(held))
        self.cursor.hashes = {n: h for n, h in self.cursor.hashes.items() if n < first}
        self._derived_below(first)

    def _pool_topics(self) -> list[Any]:
        return [sorted({t for f in self._families() for t in f.pool_topics})]

    def _families(self) -> list[Family]:
        return [FAMILIES[v.family] for v in self.venues.values()]

    def _transferred(self) -> list[str]:
        """The tokens whose transfers are read: every pool's tokens, and the pools that are
        their own LP tokens."""
        lp = [a for a, f in self.pools.items()
              if FAMILIES[self.venues[f].family].pool_is_lp_token]
        return sorted(set(self.tokens["address"]) | set(lp))

    def _logs(self, first: int, last: int, addresses: Sequence[str],
              topics: list[Any]) -> list[dict]:
        """The logs of [first, last] from `addresses` matching `topics`, in chain order."""
        found: list[dict] = []
        for i in range(0, len(addresses), ADDRESSES_PER_QUERY):
            found += self.rpc.spread_logs(first, last, addresses[i:i + ADDRESSES_PER_QUERY],
                                          topics)
        return sorted(found, key=lambda x: (log_block(x), quantity(x["logIndex"])))

    def _new_pools(self, first: int, last: int) -> list[tuple[Pool, dict]]:
        """The pools the factories made in [first, last], with their creation logs."""
        created = sorted({f.created_topic for f in self._families()})
        logs = self._logs(first, last, sorted(self.venues), [created])
        known = self.pools
        pools = []
        for log in logs:
            venue = self.venues[log["address"].lower()]
            pool = FAMILIES[venue.family].created(log)
            if pool.address not in known:
                pools.append((pool, log))
        if not pools:
            return []
        receipts = self._receipts({log["transactionHash"] for _, log in pools})
        symbols = self.rpc.batch([("eth_call", [{"to": p.address, "data": "0x95d89b41"},
                                                "latest"]) for p, _ in pools], errors=True)
        times = self._times({log_block(log) for _, log in pools})
        rows = []
        for (pool, log), symbol in zip(pools, symbols, strict=True):
            venue = self.venues[log["address"].lower()]
            receipt = receipts[log["transactionHash"]]
            launchpad = self.launchpads.get((receipt.get("to") or "").lower())
            at = times[log_block(log)]
            rows.append({
                "chain_id": self.chain_id, "address": pool.address, "factory": venue.factory,
                "factory_type": FAMILIES[venue.family].factory_type, "token0": pool.token0,
                "token1": pool.token1, "fee_bps": pool.fee_bps, "created_block": log_block(log),
                "created_log_index": quantity(log["logIndex"]),
                "created_tx": log["transactionHash"], "created_at": at,
                "creator": receipt["from"].lower(),
                "launchpad": _launchpad_id(launchpad) if launchpad else None,
                "launchpad_stage": "migrated" if launchpad else None,
                "launchpad_completed_at": at if launchpad else None, "migrated_pool": None,
                "lp_token_symbol": text(symbol) or "LP", "is_perp": False})
        self.pairs = pl.concat([self.pairs, table_frame("pairs", rows)])
        return pools

    def _new_tokens(self, pools: list[tuple[Pool, dict]]) -> list[TokenFacts]:
        """Describe the tokens of new pools not met before, and add them."""
        seen: dict[str, tuple[int, str]] = {}
        known = set(self.tokens["address"])
        for pool, log in pools:
            for token in (pool.token0, pool.token1):
                if token not in known and token not in seen:
                    seen[token] = (log_block(log), log["transactionHash"])
        if not seen:
            return []
        facts = describe(self.rpc, sorted(seen), seen)
        times = self._times({f.deploy_block for f in facts.values()})
        now = datetime.now(UTC)
        rows: list[dict[str, Any]] = [{
            "chain_id": self.chain_id, "address": f.address, "symbol": f.symbol,
            "name": f.name, "decimals": f.decimals,
            "total_supply_raw": min(f.total_supply, MAX_RAW), "max_supply_raw": None,
            "circulating_supply_raw": None, "deployer": f.deployer, "deploy_tx": f.deploy_tx,
            "deploy_block": max(1, f.deploy_block), "deployed_at": times[f.deploy_block],
            "contract_verified": False, "buy_tax": 0.0, "sell_tax": 0.0,
            "honeypot_test": "untested", "status": 0, "is_quote": f.address in self.feeds,
            "price_feed_id": self.feeds.get(f.address), "categories": [], "observed_at": now,
        } for f in facts.values()]
        self.tokens = pl.concat([self.tokens, table_frame("tokens", rows)])
        return list(facts.values())

    def _backfill(self, tokens: list[TokenFacts], first: int) -> list[dict]:
        """New tokens' transfers before this batch, from their deployment (or the first
        block this follower reads), so that their holders are whole."""
        found: list[dict] = []
        for facts in tokens:
            start = max(facts.deploy_block, self.cursor.first_block)
            if start < first:
                found += self._logs(start, first - 1, [facts.address], [TRANSFER])
        return found

    def _receipts(self, hashes: set[str]) -> dict[str, dict]:
        return self._each("eth_getTransactionReceipt", sorted(hashes), lambda h: [h],
                          "receipt of")

    def _swap_receipts(self, logs: list[dict], tx_counts: dict[int, int]) -> dict[str, dict]:
        """The receipts of the swaps' transactions: a block's all at once
        (`eth_getBlockReceipts`) where they are at least half its transactions, else one by
        one; one by one throughout on a node without the method."""
        wanted: dict[int, set[str]] = defaultdict(set)
        for log in logs:
            wanted[log_block(log)].add(log["transactionHash"])
        whole = [n for n, hashes in wanted.items() if self.block_receipts
                 and 2 * len(hashes) >= tx_counts.get(n, len(hashes) + 1)]
        found: dict[str, dict] = {}
        if whole:
            try:
                blocks = self._each("eth_getBlockReceipts", sorted(whole), lambda n: [hex(n)],
                                    "receipts of block")
            except RpcError as err:
                if not UNSUPPORTED.search(err.message):
                    raise
                self.block_receipts, whole = False, []
            else:
                found = {r["transactionHash"]: r for receipts in blocks.values()
                         for r in receipts}
        rest = {h for n, hashes in wanted.items() if n not in whole for h in hashes}
        return {**found, **self._receipts(rest)}

    def _rows(self, pool_logs: list[dict], transfers: list[dict],
              times: dict[int, datetime], tx_counts: dict[int, int], first: int,
              last: int) -> dict[str, pl.DataFrame]:
        """The batch's rows of every event table and the LP burns."""
        pools = self.pools
        cid = self.chain_id
        lp_moves: dict[tuple[str, str], list[tuple[int, str, str, int]]] = defaultdict(list)
        out: dict[str, list[dict]] = {t: [] for t in EVENT_TABLES}
        for log in transfers:
            if len(log["topics"]) != 3:
                continue
            token = log["address"].lower()
            sender, to = topic_address(log["topics"][1]), topic_address(log["topics"][2])
            amount = transferred(log)
            where = _where(log, times, cid)
            if token in pools:
                lp_moves[(log["transactionHash"], token)].append(
                    (quantity(log["logIndex"]), sender, to, amount))
                if to in (ZERO, DEAD) and sender not in (ZERO, token) and amount:
                    self._burned(token, sender, to, amount, log, times)
                continue
            if amount == 0 or sender in pools or to in pools or amount > MAX_RAW:
                continue
            out["transfers"].append({**where, "tx_hash": log["transactionHash"],
                                     "token": token, "from_address": sender,
                                     "to_address": to, "amount": amount})
        events = [(log, self._event(log, pools)) for log in pool_logs]
        receipts = self._swap_receipts([log for log, event in events
                                        if isinstance(event, SwapEvent)], tx_counts)
        holders = self._position_holders(events, first, last)
        out["reserves"] += self._valued_reserves(events, transfers, times, first)
        for log, event in events:
            pool = log["address"].lower()
            base = {**_where(log, times, cid), "tx_hash": log["transactionHash"], "pair": pool}
            if isinstance(event, SwapEvent):
                amounts = (event.amount0_in, event.amount1_in, event.amount0_out,
                           event.amount1_out)
                if max(amounts) > MAX_RAW:
                    continue
                receipt = receipts[log["transactionHash"]]
                used, fee = gas(receipt)
                out["swaps"].append({**base, "maker": receipt["from"].lower(),
                                     "sender": event.sender, "recipient": event.recipient,
                                     "amount0_in": amounts[0], "amount1_in": amounts[1],
                                     "amount0_out": amounts[2], "amount1_out": amounts[3],
                                     "gas_used": max(1, used), "tx_fee_raw": fee})
            elif isinstance(event, Reserves):
                out["reserves"].append({**base, "reserve0": event.reserve0,
                                        "reserve1": event.reserve1})
            elif isinstance(event, Liquidity):
                owner, liquidity = _liquidity_owner(event, lp_moves[(log["transactionHash"],
                                                                     pool)],
                                                    quantity(log["logIndex"]), pool)
                owner = holders.get((log["transactionHash"], quantity(log["logIndex"])), owner)
                if owner is None or not liquidity or max(event.amount0, event.amount1) > MAX_RAW:
                    continue
                out["liquidity_events"].append({**base, "kind": event.kind, "owner": owner,
                                                "amount0": event.amount0,
                                                "amount1": event.amount1,
                                                "liquidity": liquidity})
        counts: dict[int, int] = defaultdict(int)
        for name in ("transfers", "liquidity_events", "reserves", "swaps"):
            for row in out[name]:
                counts[row["block_number"]] += 1
        out["blocks"] = [{"chain_id": cid, "block_number": n, "block_time": times[n],
                          "log_count": c} for n, c in sorted(counts.items())]
        return {name: table_frame(name, rows) for name, rows in out.items()}

    def _valued_reserves(self, events: list[tuple[dict, Any]], transfers: list[dict],
                         times: dict[int, datetime], first: int) -> list[dict]:
        """The reserves of the batch's concentrated-liquidity pools after each of their logs:
        the pool's token balances (asked at the block before the batch, then moved by the
        tokens' transfers in log order) valued at its price after the log, as two equal halves
        (reserve1 = (balance1 + balance0 * P) / 2, reserve0 = reserve1 / P, P token1 per
        token0): their ratio is the pool's price, twice either side its balances' worth."""
        pools = self.pools
        valued = {p for p, f in pools.items()
                  if FAMILIES[self.venues[f].family].reserves_from_balances}
        touched = sorted({log["address"].lower() for log, _ in events} & valued)
        if not touched:
            return []
        sides = {p: (t0, t1) for p, t0, t1
                 in self.pairs.select("address", "token0", "token1").iter_rows() if p in touched}
        before = hex(max(first - 1, 0))
        calls = [("eth_call", [{"to": token, "data": BALANCE_OF + pool[2:].rjust(64, "0")},
                               before]) for pool in touched for token in sides[pool]]
        calls += [("eth_call", [{"to": pool, "data": SLOT0}, before]) for pool in touched]
        answers = [a for chunk in self.rpc.batches(
            [calls[i:i + CALLS_PER_BATCH] for i in range(0, len(calls), CALLS_PER_BATCH)],
            errors=True) for a in chunk]
        balances: dict[tuple[str, str], int] = {}
        for i, pool in enumerate(touched):
            for j, token in enumerate(sides[pool]):
                balances[(pool, token)] = number(answers[2 * i + j]) or 0
        price = {pool: number(answers[2 * len(touched) + i]) for i, pool in enumerate(touched)}
        moves = [(log_block(log), quantity(log["logIndex"]), log, None) for log in transfers
                 if len(log["topics"]) == 3 and log_block(log) >= first and (
                     topic_address(log["topics"][1]) in sides
                     or topic_address(log["topics"][2]) in sides)]
        moves += [(log_block(log), quantity(log["logIndex"]), log, event)
                  for log, event in events if log["address"].lower() in sides]
        rows: list[dict] = []
        for _, _, log, event in sorted(moves, key=lambda m: (m[0], m[1])):
            if event is None:
                token = log["address"].lower()
                amount = transferred(log)
                for end, sign in ((topic_address(log["topics"][2]), 1),
                                  (topic_address(log["topics"][1]), -1)):
                    if end in sides and token in sides[end]:
                        balances[(end, token)] += sign * amount
                continue
            pool = log["address"].lower()
            if isinstance(event, SwapEvent | Price) and event.sqrt_price_x96:
                price[pool] = event.sqrt_price_x96
            sqrt_price = price.get(pool)
            if not sqrt_price:
                continue
            b0, b1 = (max(balances[(pool, t)], 0) for t in sides[pool])
            worth = b1 * 2**192 + b0 * sqrt_price**2
            rows.append({**_where(log, times, self.chain_id), "tx_hash": log["transactionHash"],
                         "pair": pool, "reserve0": min(worth // (2 * sqrt_price**2), MAX_RAW),
                         "reserve1": min(worth // 2**193, MAX_RAW)})
        return rows

    def _position_holders(self, events: list[tuple[dict, Any]], first: int,
                          last: int) -> dict[tuple[str, int], str]:
        """Who holds the position each concentrated-liquidity `Mint` or `Burn` of the
        batch changed, by (transaction, log index): the holder of the position manager's NFT
        named by the `IncreaseLiquidity` or `DecreaseLiquidity` that follows it in its
        transaction (a new NFT's first transfer, else its owner at that block)."""
        managers = {v.position_manager for v in self.venues.values() if v.position_manager}
        changed = [log for log, event in events
                   if isinstance(event, Liquidity) and event.owner in managers]
        if not changed:
            return {}
        logs = self._logs(first, last, sorted(managers),
                          [[INCREASE_LIQUIDITY, DECREASE_LIQUIDITY, TRANSFER]])
        by_tx: dict[str, list[dict]] = defaultdict(list)
        for log in logs:
            by_tx[log["transactionHash"]].append(log)
        named: dict[tuple[str, int], int] = {}
        minted: dict[int, str] = {}
        for log in logs:
            if log["topics"][0] == TRANSFER and len(log["topics"]) == 4 \
                    and topic_address(log["topics"][1]) == ZERO:
                minted[int(log["topics"][3], 16)] = topic_address(log["topics"][2])
        for log in changed:
            at = quantity(log["logIndex"])
            follows = next((m for m in by_tx[log["transactionHash"]]
                            if m["topics"][0] in (INCREASE_LIQUIDITY, DECREASE_LIQUIDITY)
                            and quantity(m["logIndex"]) > at), None)
            if follows is not None:
                named[(log["transactionHash"], at)] = int(follows["topics"][1], 16)
        manager = {(log["transactionHash"], quantity(log["logIndex"])): event.owner
                   for log, event in events if isinstance(event, Liquidity)}
        asked = sorted({(manager[key], t, log_block(log)) for log in changed
                        if (t := named.get(key := (log["transactionHash"],
                                                   quantity(log["logIndex"])))) is not None
                        and t not in minted})
        owners = self.rpc.batch([("eth_call", [{"to": m, "data": OWNER_OF + f"{t:064x}"},
                                               hex(block)]) for m, t, block in asked],
                                errors=True) if asked else []
        held = {t: "0x" + a[-40:].lower() for (_, t, _), a in zip(asked, owners, strict=True)
                if isinstance(a, str) and len(a) >= 42}
        return {key: minted.get(token) or held[token] for key, token in named.items()
                if token in minted or token in held}

    def _event(self, log: dict, pools: dict[str, str]) -> Any:
        return FAMILIES[self.venues[pools[log["address"].lower()]].family].event(log)

    def _burned(self, pool: str, owner: str, to: str, amount: int, log: dict,
                times: dict[int, datetime]) -> None:
        """An LP holder's transfer to the zero or dead address: liquidity burnt for good."""
        tx = log["transactionHash"]
        before = self.locks.filter(pl.col("tx_hash") == tx)
        total = amount + (int(before["amount"][0]) if before.height else 0)
        if total > MAX_RAW:
            return
        row = {"chain_id": self.chain_id, "pair": pool, "kind": "burn", "provider": None,
               "locker_address": to, "owner": owner, "amount": total,
               "locked_at": times[log_block(log)], "unlock_at": None, "tx_hash": tx,
               "block_number": log_block(log)}
        self.locks = pl.concat([self.locks.filter(pl.col("tx_hash") != tx),
                                table_frame("lp_locks", [row])])

    def _write(self, rows: dict[str, pl.DataFrame], first: int, upto: int, fresh: bool,
               head: int, head_time: datetime, last: int, times: dict[int, datetime],
               watermark: datetime) -> None:
        """Commit the batch, table by table (the mark that follows makes it visible); its
        head observation is as of the batch's watermark."""
        lake, cid = self.lake, self.chain_id
        chained = self._chained_feeds()
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
        catalog = pl.concat([self._catalog(), table_frame("oracle_feeds", self.derivation.catalog(
            dict(zip(self.tokens["address"], self.tokens["symbol"], strict=True))))])
        for name, frame in (("oracle_feeds", catalog), ("chains", self._chain_row(times)),
                            ("venues", self._venue_rows()), ("tokens", self.tokens),
                            ("pairs", self.pairs), ("lp_locks", self.locks)):
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

    def _prices(self, first: int, last: int, times: dict[int, datetime]) -> pl.DataFrame:
        """The batch's price updates: the aggregators' rounds of its blocks; with the first
        block the follower reads, the pegs."""
        self._catalog()
        stored = (self.lake.scan("oracle_updates")
                  .filter(pl.col("feed_id").is_in(self.prices.chainlink_feeds),
                          pl.col("slot") < first)
                  .group_by("feed_id").agg(pl.col("publish_time").max()).collect())
        made = [self.prices.rounds(self.rpc, first, last, dict(stored.iter_rows()),
                                   {n: int(t.timestamp()) for n, t in times.items()})]
        start = self.cursor.first_block
        if first <= start <= last:
            made.append(self.prices.pegs(int(times[start].timestamp()), start))
        return pl.concat(made)

    def _chained_feeds(self) -> list[str]:
        """The feeds whose updates are read with the chain's blocks and rolled back with them:
        its aggregators', its pegs' and the prices derived through its pools."""
        return sorted({*self.chain_feeds, *self.derivation.expo})

    def _derived_below(self, below: int) -> None:
        """The derivation's state as the lake holds it before block `below`: each pool's
        last reserves, each derived feed's exponent and last price."""
        chain = pl.col("chain_id") == self.chain_id
        held = (self.lake.scan("reserves").filter(chain, pl.col("block_number") < below)
                .sort("block_number", "log_index").group_by("pair").last()
                .select("pair", "reserve0", "reserve1").collect()
                if self.lake.version("reserves") is not None else None)
        feeds = (self.lake.scan("oracle_feeds").filter(pl.col("source") == "derived")
                 .select("feed_id", "expo").collect()
                 if self.lake.version("oracle_feeds") is not None else None)
        # The lake's derived feeds are every chain's: this chain's are its tokens'.
        mine = {derived_feed_id(self.chain_id, t) for t in self.tokens["address"]}
        ours = {} if feeds is None else {f: e for f, e in feeds.iter_rows() if f in mine}
        last = (self.lake.scan("oracle_updates")
                .filter(pl.col("feed_id").is_in(list(ours)), pl.col("slot") < below)
                .sort("publish_time").group_by("feed_id").last()
                .select("feed_id", "publish_time", "price", "expo").collect()
                if ours else None)
        self.derivation.restart(held, ours, last)

    def _derived(self, syncs: pl.DataFrame, times: dict[int, datetime],
                 sourced: pl.DataFrame, first: int) -> pl.DataFrame:
        """The batch's prices derived through its pools (docs/ingest.md, "Prices"): the
        sources' prices in force come from the lake and from this batch's updates."""
        if syncs.is_empty():
            return table_frame("oracle_updates", [])
        self.derivation.decimals = dict(zip(self.tokens["address"], self.tokens["decimals"],
                                            strict=True))
        sources = self.feeds
        start = int(min(times.values()).timestamp())
        kept = self.lake.scan("oracle_updates").filter(
            pl.col("feed_id").is_in(list(sources.values())),
            # A range read again: its own updates are this batch's.
            ~(pl.col("feed_id").is_in(self.chain_feeds) & (pl.col("slot") >= first)))
        stored = pl.concat([
            kept.filter(pl.col("publish_time") < start).sort("publish_time")
            .group_by("feed_id").last().collect(),
            kept.filter(pl.col("publish_time") >= start).collect()], how="diagonal_relaxed")
        usd = Prices(pl.concat([sourced.select("feed_id", "publish_time", "price", "expo"),
                                stored.select("feed_id", "publish_time", "price", "expo")])
                     .unique(["feed_id", "publish_time"], keep="first", maintain_order=True))
        pools = {p: (t0, t1) for p, t0, t1
                 in self.pairs.select("address", "token0", "token1").iter_rows()}
        found = self.derivation.updates(
            pools, sources, syncs.sort("block_number", "log_index"),
            {n: int(t.timestamp()) for n, t in times.items()}, usd)
        priced = {f: t for t in self.tokens["address"]
                  if (f := derived_feed_id(self.chain_id, t)) in self.derivation.expo}
        if priced:
            self.tokens = self.tokens.with_columns(price_feed_id=pl.when(
                pl.col("address").is_in(list(priced.values())) & pl.col("price_feed_id")
                .is_null()).then(pl.col("address").replace(
                    {t: f for f, t in priced.items()})).otherwise(pl.col("price_feed_id")))
        return table_frame("oracle_updates", found)

    def _catalog(self) -> pl.DataFrame:
        """The quote tokens' feeds (asked of the node and the Hermes upstream once): what their
        updates are read with."""
        if self.catalog is None:
            found = [self.prices.feeds(self.rpc)]
            if self.hermes is not None:
                found.append(self.hermes.catalog())
            self.catalog = pl.concat(found)
        return self.catalog

    def _hermes_updates(self, priced: set[datetime], watermark: datetime) -> pl.DataFrame:
        """The Hermes feeds' updates a commit at `watermark` adds: what the stream received up
        to it, and the benchmark of each second a priced block of the batch stands at that the
        stream did not cover (a backfill, or the time it was down); none the lake holds."""
        if self.hermes is None:
            return table_frame("oracle_updates", [])
        self._catalog()
        hermes = self.hermes
        missed = {int(t.timestamp()) for t in priced
                  if not all(hermes.covered(f, int(t.timestamp())) for f in hermes.feeds)}
        rows = hermes.at(missed) + hermes.updates(int(watermark.timestamp()))
        return table_frame("oracle_updates", rows).unique(
            ["feed_id", "publish_time"], keep="first", maintain_order=True).sort(
            "feed_id", "publish_time")

    def _unheld(self, updates: pl.DataFrame) -> pl.DataFrame:
        """`updates` but the Hermes feeds' the lake already holds (under the writers' lock:
        another chain's follower may have written the same feed's seconds)."""
        shared = pl.col("feed_id").is_in(self.hermes.feeds if self.hermes else [])
        found = updates.filter(shared)
        if found.is_empty():
            return updates
        held = (self.lake.scan("oracle_updates")
                .filter(shared, pl.col("publish_time").is_between(
                    found["publish_time"].min(), found["publish_time"].max()))
                .select("feed_id", "publish_time").collect())
        return pl.concat([updates.filter(~shared),
                          found.join(held, on=["feed_id", "publish_time"], how="anti")])

    def _append_updates(self, updates: pl.DataFrame) -> None:
        """Add updates that no range's rewrite covers: the Hermes feeds', and rounds in force
        before a range."""
        if not updates.is_empty():
            self.lake.append("oracle_updates", updates)

    def flush(self, head: int, seen_at: datetime) -> None:
        """Commit and mark the Hermes stream's updates received while no block came: the lake
        is complete up to `seen_at`, when `head` was the head and every block to it was read."""
        found = self._hermes_updates(set(), seen_at)
        with self.lake.writing():
            mark = self._begin()
            self._append_updates(self._unheld(found))
            self._marked(seen_at, head, mark)

    def _marked(self, watermark: datetime, head: int, mark: Progress | None) -> None:
        """Mark what was committed: this chain's cursor beside the other chains', the lake
        complete up to the newest chain's watermark; the Hermes updates it holds are the
        lake's from now on."""
        self.cursor.step += 1
        own = {**self.cursor.as_meta(head, self.confirmations),
               "watermark": watermark.isoformat()}
        chains = {**(chains_of(mark.meta) if mark is not None else {}), str(self.chain_id): own}
        self.lake.mark(watermark if mark is None else max(watermark, mark.watermark), WRITER,
                       1 + (mark.step if mark is not None else 0), {**own, "chains": chains})
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
        for v in self.venues.values():
            rows.append({"chain_id": self.chain_id, "venue_id": v.venue_id, "name": v.name,
                         "category": "dex", "factory": v.factory,
                         "factory_type": FAMILIES[v.family].factory_type, "router": v.router})
            if v.launchpad:
                rows.append({"chain_id": self.chain_id, "venue_id": _launchpad_id(v),
                             "name": f"{v.name} Launchpad", "category": "launchpad",
                             "factory": v.launchpad, "factory_type": "launchpad",
                             "router": ""})
        return table_frame("venues", rows)


def chains_of(meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each chain's cursor in a mark's meta, by chain id (a lake marked by a follower of one
    chain, before lakes held several, names its one chain at the top)."""
    if "chains" in meta:
        return dict(meta["chains"])
    return {str(meta["chain_id"]): meta} if "chain_id" in meta else {}


def unreachable(err: RpcError, since: datetime) -> dict[str, str]:
    """A node's state as a chain's cursor records it while the node does not answer."""
    return {"state": "unreachable", "last_error": str(err), "since": since.isoformat(),
            "checked_at": datetime.now(UTC).isoformat()}


def node_state(lake: Lake, chain_id: int, node: dict[str, str] | None) -> None:
    """Record in the lake's mark how a chain's node answers (None: it answers), beside the
    chain's cursor as last marked: how /status learns of a node that stopped answering while
    no batch is written. A chain never marked has nothing to say it of."""
    with lake.writing():
        mark = lake.progress()
        begun(lake, mark)
        if mark is None or str(chain_id) not in chains_of(mark.meta):
            return
        chains = chains_of(mark.meta)
        own = {k: v for k, v in chains[str(chain_id)].items() if k != "node"}
        was = chains[str(chain_id)].get("node")
        if node is not None and was is not None:
            node = {**node, "since": was["since"]}
        elif node is None and was is None:
            return
        chains[str(chain_id)] = own if node is None else {**own, "node": node}
        lake.mark(mark.watermark, mark.writer, mark.step + 1, {**mark.meta, "chains": chains})


def chain_of_slug(lake: Lake, slug: str) -> int | None:
    """The id of the chain the lake knows by `slug` (None when it knows none)."""
    if lake.version("chains") is None:
        return None
    found = lake.scan("chains").filter(pl.col("slug") == slug).select("chain_id").collect()
    return None if found.is_empty() else int(found.item(0, 0))


def begun(lake: Lake, mark: Progress | None) -> None:
    """Under the writers' lock: undo what a writer that died left of a batch it began and did
    not mark (nothing else can be writing). Without a mark, every table is such a batch's."""
    if mark is None:
        lake.roll_back(Progress(datetime.fromtimestamp(0, UTC), WRITER, 0, {}, {}))
    elif mark.meta.get("writing") is not None or "chains" not in mark.meta:
        lake.roll_back(mark)


def _launchpad_id(venue: VenueConfig) -> str:
    return f"{venue.venue_id}-launchpad"


def _liquidity_owner(event: Liquidity, moves: list[tuple[int, str, str, int]], at: int,
                     pool: str) -> tuple[str | None, int | None]:
    """Who added or removed liquidity and how much LP it was, from the pool's LP transfers of
    the same transaction before the event: a mint's transfer from the zero address to the
    owner, a burn's from the pool to the zero address."""
    before = [m for m in moves if m[0] < at]
    if event.kind == "mint":
        minted = [m for m in before if m[1] == ZERO and m[2] != ZERO]
        return (minted[-1][2], minted[-1][3]) if minted else (event.owner, event.liquidity)
    burnt = [m for m in before if m[1] == pool and m[2] == ZERO]
    return event.owner, burnt[-1][3] if burnt else event.liquidity


def transferred(log: dict) -> int:
    """The amount an ERC-20 `Transfer` log moved (0 when its data is empty)."""
    return decoded(["uint256"], log["data"][:66])[0] if log["data"] not in ("0x", "") else 0


def log_block(log: dict) -> int:
    """A log's block number."""
    return quantity(log["blockNumber"])


def _where(log: dict, times: dict[int, datetime], chain_id: int) -> dict[str, Any]:
    block = log_block(log)
    return {"chain_id": chain_id, "block_number": block, "log_index": quantity(log["logIndex"]),
            "block_time": times[block]}


def _same_chain(logs: list[dict], headers: dict[int, dict], first: int) -> None:
    """Every log of the batch's range comes from the blocks whose headers were read (else the
    chain changed between the two reads, and the batch is read again)."""
    for log in logs:
        block = log_block(log)
        if block >= first and block in headers and log["blockHash"] != headers[block]["hash"]:
            raise ChainMoved(f"block {block} changed while it was read")


def _time(header: dict) -> datetime:
    """A block header's time."""
    return datetime.fromtimestamp(quantity(header["timestamp"]), UTC)


def _said(batch: Batch) -> str:
    rate = (batch.last - batch.first + 1) / batch.seconds if batch.seconds else 0.0
    counts = ", ".join(f"{n} {k}" for k, n in batch.rows.items() if n)
    reorg = f" (reorg: written again from block {batch.reorged_from})" if batch.reorged_from \
        is not None else ""
    return (f"blocks {batch.first:,}..{batch.last:,}{reorg}: {counts or 'no events'}; "
            f"head {batch.head:,} ({batch.head - batch.last:,} behind), {rate:,.0f} blocks/s")
