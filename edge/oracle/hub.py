"""The price hub: each feed's latest update, a short recent record, and the stream channels.

Updates are kept in publish order per feed: one that is not newer than the feed's latest is
dropped, so every reader sees each feed's updates in order and each at most once.
"""

import asyncio
import collections
import time
from dataclasses import dataclass, field
from typing import Any

CHANNELS = {"real_time": None, "fixed_rate@200ms": 0.2, "fixed_rate@1000ms": 1.0}
# How many updates per feed the hub remembers for reads at recent instants (the published
# history covers the rest): about ten minutes of a feed updating every slot.
RECENT_PER_FEED = 1_500
# Fixed-rate ticks fall this long after their boundary, so that the updates of a slot starting
# on the same boundary go out on that tick instead of waiting a whole period for the next.
TICK_OFFSET_S = 0.01


@dataclass(slots=True)
class Update:
    """One feed's update, in its integer units, under the id its upstream names it by."""

    key: str
    price: int
    conf: int
    expo: int
    ema_price: int
    ema_conf: int
    publish_time: int
    prev_publish_time: int
    slot: int
    proof_available_time: int
    _body: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def benchmark(self) -> bool:
        """The first update of its second (its previous one was published in another second)."""
        return self.prev_publish_time != self.publish_time

    def body(self) -> dict[str, Any]:
        """The parsed update without its id: prices, EMA and metadata as Hermes writes them."""
        if self._body is None:
            self._body = {
                "price": {"price": str(self.price), "conf": str(self.conf), "expo": self.expo,
                          "publish_time": self.publish_time},
                "ema_price": {"price": str(self.ema_price), "conf": str(self.ema_conf),
                              "expo": self.expo, "publish_time": self.publish_time},
                "metadata": {"slot": self.slot,
                             "proof_available_time": self.proof_available_time,
                             "prev_publish_time": self.prev_publish_time}}
        return self._body


class Tick:
    """What one tick of a channel carries: per feed, its latest update since the channel's last
    tick and the first benchmark update among them; `next` resolves to the following tick."""

    __slots__ = ("at", "cache", "firsts", "next", "updates")

    def __init__(self, updates: dict[str, Update], firsts: dict[str, Update]) -> None:
        self.updates = updates
        self.firsts = firsts
        self.at = time.time()
        # Subscribers await it through asyncio.shield: one leaving must not cancel it for all.
        self.next: asyncio.Future[Tick] = asyncio.get_running_loop().create_future()
        self.cache: dict[tuple[Any, ...], bytes] = {}


class Channel:
    """A cadence subscribers follow: every upstream batch (`real_time`), or a fixed period."""

    def __init__(self, name: str, period_s: float | None) -> None:
        self.name = name
        self.period_s = period_s
        self.current = Tick({}, {})
        self.subscribers = 0
        self._latest: dict[str, Update] = {}
        self._firsts: dict[str, Update] = {}

    def offer(self, batch: list[Update]) -> None:
        """Take a batch of updates: sent now on `real_time`, kept for the next tick otherwise."""
        for update in batch:
            self._latest[update.key] = update
            if update.benchmark and update.key not in self._firsts:
                self._firsts[update.key] = update
        if self.period_s is None:
            self.flush()

    def flush(self) -> None:
        """Send what changed since the last tick (nothing when nothing did)."""
        if not self._latest:
            return
        tick = Tick(self._latest, self._firsts)
        self._latest, self._firsts = {}, {}
        self._publish(tick)

    def beat(self) -> None:
        """Send an empty tick: streams answer it with a keep-alive comment."""
        self._publish(Tick({}, {}))

    def _publish(self, tick: Tick) -> None:
        previous, self.current = self.current, tick
        previous.next.set_result(tick)

    async def run(self) -> None:
        """Tick on the wall clock's multiples of the period, forever (cancelled on shutdown)."""
        period = self.period_s
        assert period is not None
        due = (time.time() // period + 1) * period + TICK_OFFSET_S
        while True:
            late = time.time() - due
            if late < 0:
                # A timer may fire a little early: sleep again rather than tick twice.
                await asyncio.sleep(-late)
                continue
            self.flush()
            due = due + period if late < period else \
                (time.time() // period + 1) * period + TICK_OFFSET_S


class PriceHub:
    """Each feed's latest update and recent ones, fed by one upstream, read by every route."""

    def __init__(self) -> None:
        self.latest: dict[str, Update] = {}
        self.recent: dict[str, collections.deque[Update]] = {}
        self.channels = {name: Channel(name, period) for name, period in CHANNELS.items()}
        self.version = 0
        self.received_at: float | None = None
        self.started_at = time.time()

    def receive(self, batch: list[Update]) -> int:
        """Take updates from the upstream, dropping any not newer than its feed's latest;
        returns how many were kept."""
        kept = []
        for update in batch:
            held = self.latest.get(update.key)
            if held is not None and update.slot <= held.slot:
                continue
            self.latest[update.key] = update
            recent = self.recent.get(update.key)
            if recent is None:
                recent = self.recent[update.key] = collections.deque(maxlen=RECENT_PER_FEED)
            recent.append(update)
            kept.append(update)
        if kept:
            self.version += 1
            self.received_at = time.time()
            for channel in self.channels.values():
                channel.offer(kept)
        return len(kept)

    def first_at_or_after(self, key: str, ts: int) -> Update | None:
        """The first update of the feed published at or after `ts` that the hub saw, when its
        record reaches back to `ts` without a gap (None otherwise)."""
        recent = self.recent.get(key)
        if not recent or ts <= recent[0].prev_publish_time:
            return None
        for update in recent:
            if update.publish_time >= ts:
                return update
        return None

    def covered_since(self, key: str) -> int | None:
        """The earliest instant from which the hub's record of the feed has no gap."""
        recent = self.recent.get(key)
        return None if not recent else recent[0].prev_publish_time + 1
