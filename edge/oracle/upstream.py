"""The live oracle of one edge instance: its hub, its upstream, and the tasks that run them."""

import asyncio
import contextlib
import time
from typing import Any

from edge.oracle.hub import PriceHub
from edge.oracle.upstreams import upstream_for

HEARTBEAT_S = 15.0


class LiveOracle:
    """Starts on first use inside the event loop; each instance follows its upstream itself."""

    def __init__(self, upstream_url: str | None) -> None:
        self.upstream = upstream_for(upstream_url)
        self._hub: PriceHub | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def hub(self) -> PriceHub:
        """The hub, started if it was not yet."""
        return self._hub if self._hub is not None else self.start()

    def start(self) -> PriceHub:
        """Start following the upstream (once; inside the running event loop)."""
        if self._hub is not None:
            return self._hub
        hub = PriceHub()
        self.upstream.prime(hub)
        self._hub = hub
        self._tasks = [asyncio.ensure_future(self.upstream.follow(hub)),
                       asyncio.ensure_future(self._heartbeat(hub)),
                       *(asyncio.ensure_future(c.run()) for c in hub.channels.values()
                         if c.period_s is not None)]
        return hub

    @staticmethod
    async def _heartbeat(hub: PriceHub) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            for channel in hub.channels.values():
                channel.beat()

    def status(self) -> dict[str, Any]:
        """The upstream's kind and health, and how current the hub is."""
        hub = self.hub
        received = hub.received_at
        return {"kind": self.upstream.kind, "url": self.upstream.url,
                "connected": self.upstream.connected,
                "seconds_since_update": None if received is None
                else round(time.time() - received, 3),
                "feeds": len(hub.latest),
                "subscribers": {name: c.subscribers for name, c in hub.channels.items()}}

    async def stop(self) -> None:
        """Cancel the upstream and the channel tasks."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks, self._hub = [], None
