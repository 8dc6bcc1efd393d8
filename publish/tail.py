"""The live tail: what the lake holds past a snapshot's watermark, as the edges read it.

A writer follows the lake and, after each of its commits, publishes the trades since the
watermark of the snapshot it builds on and every pair's state at the lake's newest watermark
the pairs created since, the wallets' trades, the price feeds' prices and changes at that
watermark and, on a real chain's lake, its feeds' updates (`live/{seq}/trades.arrow`,
`pairs.arrow`, `new_pairs.arrow`, `wallet_trades.arrow`, `feeds.arrow`,
`oracle_updates.arrow`), then flips `live/TAIL` to name them: any number of edges following the pointer
serve the same tail, and a reader never sees half of one.
"""

import io
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import polars as pl

from core.store import IMMUTABLE, REVALIDATE, NotFound, ObjectStore

TAIL = "live/TAIL"
ARROW = "application/vnd.apache.arrow.file"
TABLES = ("trades", "pairs", "new_pairs", "wallet_trades", "feeds", "pair_figures", "tokens",
          "oracle_updates")
# Tails kept behind the newest, so that an edge reading the pointer just before a flip still
# finds the objects it names.
KEPT = 8


@dataclass(frozen=True)
class Tail:
    """One published tail: its sequence number, the snapshot it builds on and that snapshot's
    watermark (`since`), the lake's watermark it reaches (`as_of`, per chain in `chains`), the
    chains whose node does not answer (`nodes`: state, last error, since when), when its
    writer saw that watermark and when it published the tail, and its tables (the live rows
    `pair_figures` and `tokens` are empty when the snapshot lacks what they are made from;
    `oracle_updates`, a real lake's price updates, is empty on the simulator's)."""

    seq: int
    snapshot_id: str
    since: datetime
    as_of: datetime
    chains: dict[int, datetime]
    nodes: dict[int, dict[str, str]]
    picked_at: float
    published_at: float
    trades: pl.DataFrame
    pairs: pl.DataFrame
    new_pairs: pl.DataFrame
    wallet_trades: pl.DataFrame
    feeds: pl.DataFrame
    pair_figures: pl.DataFrame
    tokens: pl.DataFrame
    oracle_updates: pl.DataFrame

    def pointer(self) -> dict[str, object]:
        """The pointer naming this tail (everything but its tables)."""
        return {"seq": self.seq, "snapshot_id": self.snapshot_id,
                "since": self.since.isoformat(), "as_of": self.as_of.isoformat(),
                "chains": {str(c): at.isoformat() for c, at in self.chains.items()},
                "nodes": {str(c): node for c, node in self.nodes.items()},
                "picked_at": self.picked_at, "published_at": self.published_at}


def _arrow(frame: pl.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.write_ipc(out, compression="lz4")
    return out.getvalue()


def publish_tail(store: ObjectStore, tail: Tail) -> None:
    """Write the tail's tables, then the pointer; drop tails older than the kept ones."""
    for name in TABLES:
        frame: pl.DataFrame = getattr(tail, name)
        store.put(f"live/{tail.seq:012d}/{name}.arrow", _arrow(frame), ARROW, IMMUTABLE)
    store.put(TAIL, orjson.dumps(tail.pointer()), "application/json", REVALIDATE)
    # The tail that falls out of the kept ones, by name: no listing of the store a publish.
    if tail.seq >= KEPT:
        store.delete([f"live/{tail.seq - KEPT:012d}/{name}.arrow" for name in TABLES])


def read_pointer(store: ObjectStore) -> dict[str, Any] | None:
    """What live/TAIL names, or None before the first tail."""
    try:
        pointer: dict[str, Any] = orjson.loads(store.get(TAIL).body)
    except NotFound:
        return None
    return pointer


def load_tail(store: ObjectStore, pointer: dict[str, Any]) -> Tail:
    """The tail a pointer names, tables included."""
    seq = int(pointer["seq"])
    tables = {name: pl.read_ipc(io.BytesIO(store.get(f"live/{seq:012d}/{name}.arrow").body))
              for name in TABLES}
    return Tail(seq, pointer["snapshot_id"], datetime.fromisoformat(pointer["since"]),
                datetime.fromisoformat(pointer["as_of"]),
                {int(c): datetime.fromisoformat(at) for c, at in pointer["chains"].items()},
                {int(c): dict(node) for c, node in pointer["nodes"].items()},
                float(pointer["picked_at"]), float(pointer["published_at"]),
                *[tables[name] for name in TABLES])
