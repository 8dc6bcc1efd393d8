"""Where each key's rows sit in a serving table published in parts, each part sorted by key:
a table's rows of one key are its slices of the parts, in part order."""

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from edge.memo import per_snapshot
from edge.snapshots import table
from publish.reader import Blocks, Snapshot, StoredBlocks, leading_alike

Key = tuple[Any, ...]
# The serving tables the edge reads by key alone (the positions also whole, once per snapshot):
# each part kept as compressed blocks, not as an uncompressed copy. Not the oracle's history:
# read whole into the feeds' histories, its decompressed copy would be the worker's own
# memory, where its mapped pages are the page cache's.
BLOCKED = frozenset({"trades", "wallet_trades", "wallet_positions", "wallet_rounds",
                     "wallet_buckets", "wallet_funding", "cohort_members"})


def key_range(columns: list[pl.Series], key: Key) -> tuple[int, int] | None:
    """Where `key` sits in sorted key columns, column by column: (offset, count), or None."""
    low, high = 0, len(columns[0])
    for column, value in zip(columns, key, strict=True):
        low = bisect_left(column, value, low, high)
        high = bisect_right(column, value, low, high)
        if low == high:
            return None
    return low, high - low


class SortedKeys:
    """A part's rows found by binary search of its sorted key columns, column by column:
    nothing is built or kept but the part's first and last keys, and a lookup reads a few of
    the columns' pages, not all."""

    def __init__(self, frame: pl.DataFrame, keys: tuple[str, ...]) -> None:
        self.frame = frame
        self.columns = [frame[k] for k in keys]
        self.height = frame.height
        # A key outside them is not searched for: of a table's many small day parts (a week of
        # history after months of a few rows a day), a key falls within a few.
        self.bounds = (frame.select(keys).row(0), frame.select(keys).row(-1)) \
            if self.height else None

    def get(self, key: Key) -> tuple[int, int] | None:
        """The key's (offset, count), or None when it has no rows."""
        if self.bounds is None or not self.bounds[0] <= key <= self.bounds[1]:
            return None
        return key_range(self.columns, key)

    def rows(self, key: Key) -> pl.DataFrame | None:
        """The key's rows, or None when it has none."""
        found = self.get(key)
        return None if found is None else self.frame.slice(*found)

    def clear(self) -> pl.DataFrame:
        """No rows, with the part's columns."""
        return self.frame.clear()


class BlockKeys:
    """A blocked part's rows found by its blocks' first and last keys, then by binary search
    within the few blocks the key may fall in (decompressed for the lookup alone)."""

    def __init__(self, blocks: Blocks | StoredBlocks, keys: tuple[str, ...]) -> None:
        self.blocks = blocks
        self.keys = keys
        self.height = blocks.height
        # The blocks' bounds, read when a key first falls within the part (a part fetched when
        # first read is not fetched for them before).
        self._bounds: tuple[int, list[Key], list[Key]] | None = None

    def _bounded(self) -> tuple[int, list[Key], list[Key]]:
        if self._bounds is None:
            # The blocks' bounds name the table's leading key columns (those of a bounded
            # type): the lookup's keys narrow the blocks as far as they are among them.
            length = leading_alike(self.blocks.key, self.keys)
            self._bounds = (length, *self.blocks.bounds(length))
        return self._bounds

    def rows(self, key: Key) -> pl.DataFrame | None:
        """The key's rows, or None when it has none."""
        if not self.blocks.may_hold(self.keys, key):
            return None
        length, firsts, lasts = self._bounded()
        # The blocks are in key order: those holding the key run from the first whose last key
        # reaches it to the last whose first key does not pass it.
        first = bisect_left(lasts, key[:length])
        last = bisect_right(firsts, key[:length]) - 1
        if first > last:
            return None
        frame = self.blocks.blocks(first, last)
        found = key_range([frame[k] for k in self.keys], key)
        return None if found is None else frame.slice(*found)

    def clear(self) -> pl.DataFrame:
        """No rows, with the part's columns."""
        return self.blocks.empty


def keys_of(frame: pl.DataFrame | Blocks | StoredBlocks,
            keys: tuple[str, ...]) -> SortedKeys | BlockKeys:
    """A part's rows found by `keys`, however the part is held."""
    return SortedKeys(frame, keys) if isinstance(frame, pl.DataFrame) else BlockKeys(frame, keys)


@dataclass(frozen=True)
class Spans:
    """A table's parts, each with where each key's rows sit."""

    at: tuple[SortedKeys | BlockKeys, ...]
    # Each part's span (its first second), for a table in time spans: what `rows(since=)`
    # passes over.
    starts: tuple[Any, ...] = ()

    def empty(self) -> pl.DataFrame:
        """No rows, with the table's columns (from its smallest part: a part fetched when first
        read is fetched for them)."""
        return min(self.at, key=lambda part: part.height).clear()

    def rows(self, key: Key, since: int | None = None) -> pl.DataFrame:
        """The key's rows, in part order (empty when it has none); with `since`, of the parts
        whose span may hold rows at or after it (not the parts the next begins at or before)."""
        skip = len(self.at) * [False]
        if since is not None and self.starts:
            # A span may be in several parts (a chain's each): a part ends where the next
            # span begins, not where the next part does.
            later = None
            for index in range(len(self.at) - 2, -1, -1):
                following = self.starts[index + 1]
                if following is not None and following != self.starts[index]:
                    later = following
                skip[index] = later is not None and later <= since
        pieces = [found for index, skipped in zip(self.at, skip, strict=True)
                  if not skipped and (found := index.rows(key)) is not None]
        if not pieces:
            return self.empty()
        return pieces[0] if len(pieces) == 1 else pl.concat(pieces)

    def tail(self, key: Key, count: int) -> pl.DataFrame:
        """The key's last `count` rows in part order, reading the parts from the last back only
        as far as they are needed (a first page of newest rows, not a history)."""
        pieces: list[pl.DataFrame] = []
        got = 0
        for index in reversed(self.at):
            if got >= count:
                break
            found = index.rows(key)
            if found is not None:
                pieces.append(found)
                got += found.height
        if not pieces:
            return self.empty()
        return (pieces[0] if len(pieces) == 1 else pl.concat(pieces[::-1])).tail(count)

    def row(self, key: Key) -> dict[str, Any] | None:
        """The key's first row by column name, or None when it has none."""
        for index in self.at:
            found = index.rows(key)
            if found is not None:
                return found.row(0, named=True)
        return None


def frame_spans(frame: pl.DataFrame, keys: tuple[str, ...]) -> Spans:
    """Look up rows in one frame sorted by `keys`."""
    return Spans((SortedKeys(frame, keys),))


def sorted_spans(frame: pl.DataFrame, keys: tuple[str, ...]) -> Spans:
    """Look up rows in a frame in any order: sorted by `keys` once (stably, so a key's rows
    keep their order), nothing made per key."""
    return frame_spans(frame.sort(list(keys), maintain_order=True), keys)


def spans(snapshot: Snapshot, name: str, keys: tuple[str, ...]) -> Spans:
    """Look up a serving table's rows by `keys`, in each of its parts by binary search (a part
    is sorted by its table's key, which `keys` begin); 503 when the snapshot lacks it. Nothing
    is built per key, and a lookup reads a few pages of each part's key columns (or the blocks
    its key falls in), not the columns whole."""
    if not snapshot.parts.get(name):
        table(snapshot, name)
    starts = tuple(part.get("span") for part in snapshot.manifest.tables[name]["parts"])
    return Spans(tuple(keys_of(part.frame, keys) for part in snapshot.parts[name]), starts)


def indexed(name: str, keys: tuple[str, ...],
            ahead: bool = False) -> Callable[[Snapshot], Spans]:
    """A serving table's spans by `keys`, made once per snapshot (`ahead`: when it is
    loaded)."""
    @per_snapshot(kept=4, ahead=ahead)
    def index(snapshot: Snapshot) -> Spans:
        return spans(snapshot, name, keys)
    return index
