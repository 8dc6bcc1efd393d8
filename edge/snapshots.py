"""Follows LATEST and keeps the loaded snapshots; losing the store never drops what it holds."""

import asyncio
import logging
import time
from datetime import UTC, datetime

import orjson

from publish.snapshot import LATEST, Snapshot, load_snapshot
from publish.store import NotFound, ObjectStore, StoreUnavailable

log = logging.getLogger("chaintape.edge")
PINNED = 4


class SnapshotHolder:
    """The current snapshot, a few recent ones (for cursors), and the store's health."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.current: Snapshot | None = None
        self.recent: dict[str, Snapshot] = {}
        self.last_check: float | None = None
        self.store_healthy = True

    def refresh(self) -> bool:
        """Load the snapshot LATEST names if it is new; True when the current one changed."""
        try:
            pointer = orjson.loads(self.store.get(LATEST).body)
            sid = pointer["snapshot_id"]
            self.store_healthy = True
            self.last_check = time.time()
            if self.current is not None and self.current.snapshot_id == sid:
                return False
            self._remember(load_snapshot(self.store, sid))
            self.current = self.recent[sid]
            log.info("serving snapshot %s", sid)
            return True
        except NotFound:
            self.store_healthy = True
            return False
        except (StoreUnavailable, OSError) as err:
            self.store_healthy = False
            log.warning("object store unreachable, keeping snapshot: %s", err)
            return False

    def pinned(self, snapshot_id: str) -> Snapshot | None:
        """A recent snapshot by id, loading it if the store still keeps it."""
        if snapshot_id in self.recent:
            return self.recent[snapshot_id]
        try:
            self._remember(load_snapshot(self.store, snapshot_id))
        except (NotFound, StoreUnavailable, OSError, ValueError):
            return None
        return self.recent.get(snapshot_id)

    def _remember(self, snapshot: Snapshot) -> None:
        self.recent[snapshot.snapshot_id] = snapshot
        for sid in sorted(self.recent)[:-PINNED]:
            if self.current is None or sid != self.current.snapshot_id:
                del self.recent[sid]

    def age_seconds(self) -> float | None:
        """Seconds since the current snapshot was published."""
        if self.current is None:
            return None
        at = datetime.fromisoformat(self.current.manifest.snapshot_at.replace("Z", "+00:00"))
        return (datetime.now(UTC) - at).total_seconds()

    async def follow(self, interval_s: float) -> None:
        """Poll LATEST forever (cancelled on shutdown)."""
        while True:
            await asyncio.sleep(interval_s)
            await asyncio.to_thread(self.refresh)
