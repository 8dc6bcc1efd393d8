"""Where each key's rows sit in a serving table published in parts, each part sorted by key:
a table's rows of one key are its slices of the parts, in part order."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from edge.memo import Kept, per_snapshot
from edge.snapshots import table
from publish.snapshot import Snapshot

Key = tuple[Any, ...]
# Indexes of parts by (object, key columns): a part shared by several snapshots is indexed once.
_indexed: Kept = Kept(256)


@dataclass(frozen=True)
class Spans:
    """Each key's (part, offset, length) runs over a table's parts."""

    parts: tuple[pl.DataFrame, ...]
    at: dict[Key, list[tuple[int, int, int]]]

    def empty(self) -> pl.DataFrame:
        """No rows, with the table's columns."""
        return self.parts[0].clear()

    def rows(self, key: Key) -> pl.DataFrame:
        """The key's rows, in part order (empty when it has none)."""
        found = self.at.get(key)
        if not found:
            return self.empty()
        pieces = [self.parts[p].slice(offset, n) for p, offset, n in found]
        return pieces[0] if len(pieces) == 1 else pl.concat(pieces)


def _runs(frame: pl.DataFrame, keys: tuple[str, ...]) -> dict[Key, tuple[int, int]]:
    runs = (frame.select(*keys).with_row_index("_at")
            .group_by(*keys, maintain_order=True).agg(pl.col("_at").first(), pl.len()))
    return dict(zip(zip(*(runs[k].to_list() for k in keys), strict=True),
                    zip(runs["_at"].to_list(), runs["len"].to_list(), strict=True), strict=True))


def frame_spans(frame: pl.DataFrame, keys: tuple[str, ...]) -> Spans:
    """Index one frame sorted by `keys`."""
    return Spans((frame,), {key: [(0, offset, n)] for key, (offset, n) in
                            _runs(frame, keys).items()})


def spans(snapshot: Snapshot, name: str, keys: tuple[str, ...]) -> Spans:
    """Index a serving table by `keys`, a part at a time; 503 when the snapshot lacks it."""
    table(snapshot, name)
    parts = snapshot.parts[name]
    at: dict[Key, list[tuple[int, int, int]]] = {}
    for p, part in enumerate(parts):
        found = _indexed.get((part.object, keys))
        if found is None:
            found = _indexed.keep((part.object, keys), _runs(part.frame, keys))
        for key, (offset, n) in found.items():
            at.setdefault(key, []).append((p, offset, n))
    return Spans(tuple(part.frame for part in parts), at)


def indexed(name: str, keys: tuple[str, ...]) -> Callable[[Snapshot], Spans]:
    """A serving table's spans by `keys`, made once per snapshot."""
    @per_snapshot(kept=4)
    def index(snapshot: Snapshot) -> Spans:
        return spans(snapshot, name, keys)
    return index
