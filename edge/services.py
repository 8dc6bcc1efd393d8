"""What every request shares: the snapshot holder, keys, meter, cashier, oracle; and their one
lifecycle, started and stopped the same way under RSGI and ASGI."""

import asyncio
import contextlib
import gc
import sys
from dataclasses import dataclass

from core.home import secret
from core.store import ObjectStore
from edge.billing.admission import Admission, Admissions
from edge.billing.keys import open_keys
from edge.billing.metering import open_meter
from edge.billing.payments import Cashier, Ledger
from edge.live.tail import LiveTail, LiveView
from edge.memo import derive_ahead
from edge.notary import Notary
from edge.oracle.upstream import LiveOracle
from edge.oracle.upstreams import tail_updates
from edge.settings import Settings
from edge.snapshots import SnapshotHolder
from edge.spans import BLOCKED
from edge.web.registry import Router
from publish.cursor import CursorSigner
from publish.reader import Snapshot, hold_blocks
from publish.tail import Tail

SWITCH_INTERVAL_S = 0.0005


class Services:
    """The edge's shared clients, built once per worker."""

    def __init__(self, store: ObjectStore, signer: CursorSigner, settings: Settings,
                 router: Router) -> None:
        self.settings = settings
        self.router = router
        self.live = LiveTail(store)
        hold_blocks(settings.blocks_mb << 20)
        self.holder = SnapshotHolder(store, settings.upstream_timeout_s,
                                     settings.home / "edge-parts", self._prepare, BLOCKED)
        self.signer = signer
        self.notary = Notary(secret("CHAINTAPE_VERDICT_KEY", settings.home / "verdict.key"))
        self.cashier = Cashier(settings.offer, Ledger(settings.home / "x402-ledger.sqlite"),
                               settings.upstream_timeout_s)
        self.meter = open_meter(settings.redis_url)
        self.keys = open_keys(settings.redis_url, settings.home)
        self.admissions = Admissions(self.keys, self.meter, self.cashier,
                                     settings.trusted_proxies)
        self.oracle = LiveOracle(settings.oracle_upstream)
        self.live.on_new = self._oracle_updates
        self._followers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Load the latest snapshot and the live tail, follow both, start the live oracle."""
        # The loading threads hand the interpreter to the requests every 0.5 ms, not every
        # 5 ms: a request that needs it while a snapshot or a tail is loaded waits that long.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        await asyncio.to_thread(self.holder.refresh)
        await asyncio.to_thread(self.live.refresh)
        self._followers = [
            asyncio.ensure_future(self.holder.follow(self.settings.poll_s)),
            asyncio.ensure_future(self.live.follow(self.settings.live_poll_s, self.holder))]
        self.oracle.start()
        if self.live.tail is not None:
            self._oracle_updates(self.live.tail)

    def _oracle_updates(self, tail: Tail) -> None:
        """A real lake's price updates a tail carries, into the live oracle's hub."""
        if tail.oracle_updates.height:
            self.oracle.hub.receive(tail_updates(tail.oracle_updates))

    def _prepare(self, snapshot: Snapshot) -> None:
        """What the live lookups read of a new snapshot on every request, and the live tail's
        view of it, made before it is served."""
        derive_ahead(snapshot)
        self.live.warm(snapshot)
        # What a snapshot derives lives as long as the snapshot (a minute or more) and holds no
        # reference cycles: out of the collector's scans, whose full pass over it held the
        # interpreter from the requests for ~100 ms. The young garbage is collected first, so
        # that no cycle of it is frozen.
        gc.collect(1)
        gc.freeze()

    async def stop(self) -> None:
        """Stop following and stop the oracle's tasks."""
        for follower in self._followers:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        self._followers = []
        await self.oracle.stop()


@dataclass(slots=True)
class State:
    """What handlers see: the shared services, the request's snapshot, the caller's
    admission and what the live tail adds to the snapshot."""

    services: Services
    snapshot: Snapshot | None
    admission: Admission
    live: LiveView | None = None

    @property
    def holder(self) -> SnapshotHolder:
        return self.services.holder

    @property
    def signer(self) -> CursorSigner:
        return self.services.signer

    @property
    def notary(self) -> Notary:
        return self.services.notary
