"""Follows LATEST and keeps the loaded snapshots; losing the store never drops what it holds."""

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl

from core.store import NotFound, ObjectStore, StoreUnavailable
from edge.web.http import Response
from edge.web.problems import ApiError
from publish.reader import (
    LATEST,
    Snapshot,
    StoredBlocks,
    forget_mapped,
    load_snapshot,
    pointed_id,
)

log = logging.getLogger("chaintape.edge")
PINNED = 4
# A mapped part no snapshot of this worker holds is removed once unused this long: other
# workers, following the same store, may be about to map it (one still mapping it keeps its
# pages). Not longer: a refresh a minute writes ~1.5 GB of parts anew at the 10M-a-week rate.
MAPPED_UNUSED_S = 300.0


def snapshot_headers(snapshot: Snapshot, as_of: str | None = None) -> list[tuple[str, str]]:
    """The headers naming the snapshot an answer comes from and the watermark it is as of
    (the snapshot's, or the live tail's when the answer holds what arrived since)."""
    return [("x-snapshot-id", snapshot.snapshot_id),
            ("x-data-as-of", as_of or snapshot.manifest.as_of)]


def snapshot_json(snapshot: Snapshot, value: object, as_of: str | None = None) -> Response:
    """A JSON answer from a snapshot, with the headers naming it and its watermark."""
    return Response(orjson.dumps(value), headers=snapshot_headers(snapshot, as_of))


def table(snapshot: Snapshot, name: str) -> pl.DataFrame:
    """A serving table of the snapshot; 503 when the published snapshot lacks it (an older
    publisher, or one that left a product out), never a server error."""
    found = snapshot.tables.get(name)
    if found is None:
        raise ApiError("upstream_unavailable",
                       f"the published snapshot carries no {name} table; retry after the next "
                       "publish")
    return found


def whole(snapshot: Snapshot, name: str) -> pl.DataFrame:
    """A serving table's every row, blocked parts decompressed (`Snapshot.whole`); 503 as
    `table` when the snapshot lacks it."""
    found = snapshot.whole(name)
    return table(snapshot, name) if found is None else found


def as_of_seconds(snapshot: Snapshot) -> int:
    """The snapshot's watermark in unix seconds."""
    return int(as_of_instant(snapshot).timestamp())


def as_of_instant(snapshot: Snapshot) -> datetime:
    """The snapshot's watermark."""
    return datetime.fromisoformat(snapshot.manifest.as_of)


class SnapshotHolder:
    """The current snapshot, a few recent ones (for cursors), and the store's health."""

    def __init__(self, store: ObjectStore, timeout_s: float = 5.0,
                 mapped: Path | None = None,
                 prepare: Callable[[Snapshot], None] = lambda _: None,
                 blocked: Collection[str] = ()) -> None:
        self.store = store
        # What is made of a new snapshot in the loading thread before it is served.
        self.prepare = prepare
        self.timeout_s = timeout_s
        # Where serving table parts are kept as memory-mapped Arrow files (None: in the heap).
        self.mapped = mapped
        # The tables whose parts are kept there as compressed blocks, each fetched when first
        # read (`publish.reader.StoredBlocks`).
        self.blocked = blocked
        self.current: Snapshot | None = None
        self.recent: dict[str, Snapshot] = {}
        self.last_check: float | None = None
        self.store_healthy = True
        self.rejected: dict[str, str] | None = None
        # Every serving table part a kept snapshot holds, by object: a snapshot that shares a
        # part with one already loaded holds the same frame, read once.
        self.parts: weakref.WeakValueDictionary[str, pl.DataFrame | StoredBlocks] = \
            weakref.WeakValueDictionary()

    def refresh(self) -> bool:
        """Load the snapshot LATEST names if it is new; True when the current one changed.
        A pointer or snapshot that cannot be read is reported in `rejected` and skipped: the
        current snapshot stays served and the next good publish is followed."""
        sid = None
        try:
            sid = pointed_id(self.store.get(LATEST).body)
            self.store_healthy = True
            self.last_check = time.time()
            if self.current is not None and self.current.snapshot_id == sid:
                self.rejected = None
                return False
            if self.rejected is not None and self.rejected["snapshot_id"] == sid:
                return False
            loaded = load_snapshot(self.store, sid, self.parts, self.mapped, blocked=self.blocked)
            self._remember(loaded)
            self.prepare(loaded)
        except NotFound:
            self.store_healthy = True
            return False
        except (StoreUnavailable, OSError) as err:
            self.store_healthy = False
            log.warning("object store unreachable, keeping snapshot: %s", err)
            return False
        except Exception as err:
            # A bad publish (a torn pointer, a manifest that is not JSON, a table that does not
            # read) is the publisher's fault, not the store's: keep serving and say so.
            self.rejected = {"snapshot_id": sid or LATEST, "error": f"{type(err).__name__}: {err}"}
            log.warning("not following %s: %s", self.rejected["snapshot_id"], err)
            return False
        self.current = self.recent[sid]
        self.rejected = None
        log.info("serving snapshot %s", sid)
        return True

    async def pinned(self, snapshot_id: str) -> Snapshot | None:
        """A recent snapshot by id, loading it if the store still keeps it (None when it does
        not); 503 when the store cannot be reached, 504 when it does not answer in time."""
        if snapshot_id in self.recent:
            return self.recent[snapshot_id]
        try:
            loaded = await asyncio.wait_for(
                asyncio.to_thread(load_snapshot, self.store, snapshot_id, self.parts, self.mapped,
                                  blocked=self.blocked),
                self.timeout_s)
        except (NotFound, ValueError):
            return None
        except TimeoutError:
            self.store_healthy = False
            raise ApiError("upstream_timeout", "the object store did not answer in time; "
                           "retry") from None
        except (StoreUnavailable, OSError):
            self.store_healthy = False
            raise ApiError("upstream_unavailable", "the object store is unreachable; retry") \
                from None
        self._remember(loaded)
        return self.recent.get(snapshot_id)

    def _remember(self, snapshot: Snapshot) -> None:
        self.recent[snapshot.snapshot_id] = snapshot
        for sid in sorted(self.recent)[:-PINNED]:
            if self.current is None or sid != self.current.snapshot_id:
                del self.recent[sid]
        if self.mapped is not None:
            kept = {part.object for kept in self.recent.values()
                    for parts in kept.parts.values() for part in parts}
            forget_mapped(self.mapped, kept, MAPPED_UNUSED_S)

    def seconds_since_check(self) -> float | None:
        """Seconds since LATEST was last read successfully."""
        return None if self.last_check is None else round(time.time() - self.last_check, 1)

    def data_age_seconds(self) -> float | None:
        """Seconds between the current snapshot's watermark (`as_of`) and now."""
        if self.current is None:
            return None
        at = datetime.fromisoformat(self.current.manifest.as_of.replace("Z", "+00:00"))
        return (datetime.now(UTC) - at).total_seconds()

    def age_seconds(self) -> float | None:
        """Seconds since the current snapshot was published."""
        if self.current is None:
            return None
        at = datetime.fromisoformat(self.current.manifest.snapshot_at.replace("Z", "+00:00"))
        return (datetime.now(UTC) - at).total_seconds()

    async def follow(self, interval_s: float) -> None:
        """Poll LATEST forever (cancelled on shutdown); a store that hangs is marked unhealthy
        after the upstream timeout, and no second read is started while one still hangs."""
        pending: asyncio.Future[bool] | None = None
        while True:
            await asyncio.sleep(interval_s)
            if pending is None or pending.done():
                pending = asyncio.ensure_future(asyncio.to_thread(self.refresh))
            try:
                await asyncio.wait_for(asyncio.shield(pending), self.timeout_s)
            except TimeoutError:
                self.store_healthy = False
            except Exception:
                # Following must outlive any one failure, or the edge serves one snapshot for good.
                log.exception("following %s failed; retrying", LATEST)
