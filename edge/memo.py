"""What the edge derives once and keeps: bounded memos, memos per snapshot, and the answers
of computed lookups."""

import functools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from edge.http import Request, Response
from edge.registry import Handler, Params
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


class Answers:
    """Rendered answers by (snapshot, URL), the oldest forgotten once their bodies pass
    `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._kept: dict[tuple[str, str, str], tuple[bytes, tuple[tuple[str, str], ...]]] = {}

    def get(self, key: tuple[str, str, str]) -> Response | None:
        """A fresh response carrying the kept answer (layers above add their own headers)."""
        found = self._kept.get(key)
        return None if found is None else Response(found[0], headers=list(found[1]))

    def keep(self, key: tuple[str, str, str], response: Response) -> None:
        """Remember a plain 200 answer; an answer larger than the whole budget is not kept."""
        size = len(response.body)
        if response.status != 200 or response.stream is not None or size > self.max_bytes:
            return
        while self._kept and self.bytes + size > self.max_bytes:
            self.bytes -= len(self._kept.pop(next(iter(self._kept)))[0])
        self._kept[key] = (response.body, tuple(response.headers))
        self.bytes += size


# What the computed lookups may keep of their answers: a few hundred pages and candle series.
ANSWER_BYTES = 64 << 20
_answers = Answers(ANSWER_BYTES)


def kept_answers(handler: Handler) -> Handler:
    """A handler whose answer depends only on the snapshot and the URL, computed once for each:
    every later call of the same URL against the same snapshot is a lookup."""
    @functools.wraps(handler)
    async def answer(request: Request, params: Params) -> Response:
        key = (request.state.snapshot.snapshot_id, request.path, request.raw_query)
        found = _answers.get(key)
        if found is None:
            found = await handler(request, params)
            _answers.keep(key, found)
        return found
    return answer
