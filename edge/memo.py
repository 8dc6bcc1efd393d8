"""What the edge derives once and keeps: bounded memos, memos per snapshot, and the answers
of computed lookups."""

import functools
import logging
from collections.abc import Callable, Hashable
from typing import TypeVar

from core.caches import ByteCache, LruCache
from edge.web.http import Request, Response
from edge.web.registry import Handler, Params
from publish.reader import Snapshot

log = logging.getLogger("chaintape.edge")

T = TypeVar("T")
V = TypeVar("V")


# The derivations made of a snapshot before it is served (`ahead`).
_AHEAD: list[Callable[[Snapshot], object]] = []


def per_snapshot(kept: int, ahead: bool = False) -> Callable[[Callable[[Snapshot], T]],
                                                             Callable[[Snapshot], T]]:
    """Derive from a snapshot once; a few snapshots are in play at once (the current one and
    those cursors pin), so the last `kept` are remembered. An `ahead` derivation (what the
    live lookups read on every request) is made by `derive_ahead` when the snapshot is
    loaded, so its first requests do not wait for it."""
    def wrap(derive: Callable[[Snapshot], T]) -> Callable[[Snapshot], T]:
        memo: LruCache[T] = LruCache(kept)

        @functools.wraps(derive)
        def derived(snapshot: Snapshot) -> T:
            found = memo.get(snapshot.snapshot_id)
            return found if found is not None else memo.put(snapshot.snapshot_id,
                                                            derive(snapshot))
        if ahead:
            _AHEAD.append(derived)
        return derived
    return wrap


def derive_ahead(snapshot: Snapshot) -> None:
    """Make every `ahead` derivation of a snapshot (in the thread that loaded it, before it is
    served); one that fails is left to its first request, which answers with the problem."""
    for derive in _AHEAD:
        try:
            derive(snapshot)
        except Exception as err:
            log.warning("snapshot %s: %s not made ahead: %s", snapshot.snapshot_id,
                        getattr(derive, "__name__", derive), err)


# What the computed lookups may keep of their answers: a few hundred pages and candle series.
ANSWER_BYTES = 64 << 20
_answers: ByteCache[tuple[bytes, tuple[tuple[str, str], ...]]] = ByteCache(ANSWER_BYTES)


def kept_answers(handler: Handler) -> Handler:
    """A handler whose answer depends only on the snapshot, the live tail and the URL, computed
    once for each: every later call of the same URL against the same data is a lookup. Only plain 200
    answers are kept, and each call gets headers of its own (the layers above add theirs)."""
    return _kept(handler, lambda request, _: (request.state.live and request.state.live.seq,
                                              None))


def kept_while(reads: Callable[[Request, Params], Hashable]) -> Callable[[Handler], Handler]:
    """`kept_answers` for a handler whose answer depends on the snapshot, the URL and only
    what `reads` says of the live tail (a pair's rows in it, say), not on which tail: a new
    tail that leaves those alone does not make it again, and the answer kept is stamped with
    the new tail's watermark, which it is as of."""
    def wrap(handler: Handler) -> Handler:
        def key(request: Request, params: Params) -> tuple[Hashable, str | None]:
            live = request.state.live
            return reads(request, params), live and live.as_of_text
        return _kept(handler, key)
    return wrap


def _kept(handler: Handler,
          key_of: Callable[[Request, Params], tuple[Hashable, str | None]]) -> Handler:
    """Keep a handler's plain 200 answers by snapshot, URL and what `key_of` says the tail
    holds for them, with the watermark to stamp on an answer kept (None: as it was made)."""
    @functools.wraps(handler)
    async def answer(request: Request, params: Params) -> Response:
        read, as_of = key_of(request, params)
        key = (request.state.snapshot.snapshot_id, read, request.path, request.raw_query)
        found = _answers.get(key)
        if found is not None:
            return Response(found[0], headers=[
                (name, as_of if as_of is not None and name == "x-data-as-of" else value)
                for name, value in found[1]])
        made = await handler(request, params)
        if made.status == 200 and made.stream is None:
            _answers.put(key, (made.body, tuple(made.headers)), len(made.body))
        return made
    return answer
