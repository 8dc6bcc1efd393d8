"""Where a chain's follower stands, as the lake's progress mark records it: each chain's cursor
(the next block, the kept block hashes) beside the other chains', and how its node answers.

A batch is begun by saying in the mark which chain is writing and ended by marking the new
cursor; a writer that died between the two is undone by the next holder of the writers' lock
(`undo_unmarked`)."""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl

from core.progress import FOLLOWER
from sources.evm.rpc import RpcError
from sources.lake import LakeWriter, Progress

WRITER = FOLLOWER
# The block hashes kept for finding a reorg's fork point: at least this many, and twice the
# confirmation depth.
KEPT_HASHES = 64


@dataclass
class ChainCursor:
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
    def from_meta(cls, meta: dict[str, Any]) -> "ChainCursor":
        """The cursor a progress mark recorded."""
        return cls(int(meta["chain_id"]), int(meta["first_block"]), int(meta["next_block"]),
                   int(meta["end_block"]), {int(n): str(h) for n, h in meta["hashes"].items()},
                   int(meta["step"]))

    def advance(self, headers: dict[int, dict], last: int, reorged: int | None,
                confirmations: int) -> None:
        """Past a batch's blocks, their hashes kept."""
        for n, h in headers.items():
            self.hashes[n] = h["hash"]
        keep = max(KEPT_HASHES, 2 * confirmations)
        self.hashes = dict(sorted(self.hashes.items())[-keep:])
        self.next_block = last + 1
        self.end_block = last + 1 if reorged is not None else max(self.end_block, last + 1)


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

    def said(self) -> str:
        """The batch as its progress line says it."""
        rate = (self.last - self.first + 1) / self.seconds if self.seconds else 0.0
        counts = ", ".join(f"{n} {k}" for k, n in self.rows.items() if n)
        reorg = (f" (reorg: written again from block {self.reorged_from})"
                 if self.reorged_from is not None else "")
        return (f"blocks {self.first:,}..{self.last:,}{reorg}: {counts or 'no events'}; "
                f"head {self.head:,} ({self.head - self.last:,} behind), {rate:,.0f} blocks/s")


def chains_of(meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each chain's cursor in a mark's meta, by chain id (a lake marked by a follower of one
    chain, before lakes held several, names its one chain at the top)."""
    if "chains" in meta:
        return dict(meta["chains"])
    return {str(meta["chain_id"]): meta} if "chain_id" in meta else {}


def undo_unmarked(lake: LakeWriter, mark: Progress | None) -> None:
    """Under the writers' lock: undo what a writer that died left of a batch it began and did
    not mark (nothing else can be writing). Without a mark, every table is such a batch's."""
    if mark is None:
        lake.roll_back(Progress(datetime.fromtimestamp(0, UTC), WRITER, 0, {}, {}))
    elif mark.meta.get("writing") is not None or "chains" not in mark.meta:
        lake.roll_back(mark)


def begin(lake: LakeWriter, chain_id: int) -> Progress | None:
    """Under the writers' lock: undo what a batch whose writer died left unmarked, then say in
    the mark that this chain's batch is being written (so that, should this writer die, the
    next holder of the lock undoes it)."""
    mark = lake.progress()
    undo_unmarked(lake, mark)
    if mark is None:
        return None
    return lake.mark(mark.watermark, WRITER, mark.step, {**mark.meta, "writing": chain_id})


def marked(lake: LakeWriter, cursor: ChainCursor, confirmations: int, watermark: datetime, head: int,
           mark: Progress | None) -> None:
    """Mark what a batch committed: the chain's cursor beside the other chains', the lake
    complete up to the newest chain's watermark."""
    cursor.step += 1
    own = {**cursor.as_meta(head, confirmations), "watermark": watermark.isoformat()}
    chains = {**(chains_of(mark.meta) if mark is not None else {}), str(cursor.chain_id): own}
    lake.mark(watermark if mark is None else max(watermark, mark.watermark), WRITER,
              1 + (mark.step if mark is not None else 0), {**own, "chains": chains})


def unreachable(err: RpcError, since: datetime) -> dict[str, str]:
    """A node's state as a chain's cursor records it while the node does not answer."""
    return {"state": "unreachable", "last_error": str(err), "since": since.isoformat(),
            "checked_at": datetime.now(UTC).isoformat()}


def node_state(lake: LakeWriter, chain_id: int, node: dict[str, str] | None) -> None:
    """Record in the lake's mark how a chain's node answers (None: it answers), beside the
    chain's cursor as last marked: how /status learns of a node that stopped answering while
    no batch is written. A chain never marked has nothing to say it of."""
    with lake.writing():
        mark = lake.progress()
        undo_unmarked(lake, mark)
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


def chain_of_slug(lake: LakeWriter, slug: str) -> int | None:
    """The id of the chain the lake knows by `slug` (None when it knows none)."""
    if lake.version("chains") is None:
        return None
    found = lake.scan("chains").filter(pl.col("slug") == slug).select("chain_id").collect()
    return None if found.is_empty() else int(found.item(0, 0))
