"""What the edge derives once and keeps: bounded memos, and memos per snapshot."""

import functools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from publish.snapshot import Snapshot

T = TypeVar("T")


class Kept(dict[Any, Any]):
    """A dict that forgets its oldest entry once it holds `size` of them."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def keep(self, key: Hashable, value: T) -> T:
        """Store `value` under `key`, making room first; returns `value`."""
        if key not in self and len(self) >= self.size:
            del self[next(iter(self))]
        self[key] = value
        return value


def per_snapshot(kept: int) -> Callable[[Callable[[Snapshot], T]], Callable[[Snapshot], T]]:
    """Derive from a snapshot once; a few snapshots are in play at once (the current one and
    those cursors pin), so the last `kept` are remembered."""
    def wrap(derive: Callable[[Snapshot], T]) -> Callable[[Snapshot], T]:
        memo: Kept = Kept(kept)

        @functools.wraps(derive)
        def derived(snapshot: Snapshot) -> T:
            found = memo.get(snapshot.snapshot_id)
            return found if found is not None else memo.keep(snapshot.snapshot_id,
                                                             derive(snapshot))
        return derived
    return wrap
