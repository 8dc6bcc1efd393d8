"""The oracle's simulated price process: one deterministic path per feed since EPOCH.

Every reader computes the same values for the same instant, so the lake's history (a sample
every tick) and the live updates of any number of edge instances (one every slot) are samples
of one process, with no shared state. The path is a random walk in ticks: each day's total move
is drawn from the feed's day sequence, the ticks within a day are a bridge to that total, and
the slots within a tick a bridge between its two ticks, each from its own seeded stream.
"""

import hashlib
from dataclasses import dataclass

import numpy as np

from core.feeds import FeedSpec
from core.market_hours import MarketHours

EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z
TICK_S = 10
SLOTS_PER_TICK = 25
SLOTS_PER_SECOND = 2.5  # a slot is 400 ms; slot n starts at 2n/5 seconds
TICKS_PER_DAY = 86_400 // TICK_S
SLOT_EPOCH = 1_600_000_000  # metadata.slot counts slots from here
SECONDS_PER_YEAR = 365 * 86_400
EMA_HALF_LIFE_TICKS = 360  # an hour
EMA_WINDOW_TICKS = 6 * EMA_HALF_LIFE_TICKS
CONF_RATIO = 4e-4
KEPT_DAYS = 4


def slot_time(slot: int) -> float:
    """The instant slot `slot` starts, in unix seconds."""
    return slot * 2 / 5


def slot_at(at: float) -> int:
    """The slot running at unix time `at`."""
    return int(np.floor(at * SLOTS_PER_SECOND + 1e-9))


def publish_second(slot: int) -> int:
    """The whole unix second an update of slot `slot` is published in."""
    return slot * 2 // 5


@dataclass(frozen=True, slots=True)
class SlotUpdate:
    """One feed's update at one slot, in the feed's integer units."""

    price: int
    conf: int
    ema_price: int
    ema_conf: int
    publish_time: int
    prev_publish_time: int
    slot: int


_EMA_WEIGHTS = 0.5 ** (np.arange(EMA_WINDOW_TICKS)[::-1] / EMA_HALF_LIFE_TICKS)
_EMA_WEIGHTS /= _EMA_WEIGHTS.sum()


class PricePath:
    """One feed's price at every tick and slot since EPOCH."""

    def __init__(self, feed: FeedSpec) -> None:
        self.feed = feed
        self.hours = MarketHours(feed.schedule)
        self.scale = 10.0 ** -feed.expo
        self.seed = int.from_bytes(hashlib.sha256(feed.symbol.encode()).digest()[:8], "big")
        self.step = feed.annual_vol * np.sqrt(TICK_S / SECONDS_PER_YEAR)
        self._day_stream = np.random.default_rng([self.seed, 0])
        self._day_starts = np.zeros(1)
        self._bridges: dict[int, np.ndarray] = {}
        self._tick: tuple[int, np.ndarray, float] | None = None

    def _day_start(self, day: int) -> float:
        if day < 0:
            raise ValueError(f"the price process starts at {EPOCH} (2024-01-01); "
                             "nothing is defined before it")
        known = len(self._day_starts)
        if day >= known:
            moves = self._day_stream.standard_normal(day + 1 - known) * np.sqrt(TICKS_PER_DAY)
            self._day_starts = np.concatenate([
                self._day_starts, self._day_starts[-1] + np.cumsum(moves)])
        return float(self._day_starts[day])

    def _day_bridge(self, day: int) -> np.ndarray:
        """The walk at each tick of `day`, relative to the day's start."""
        found = self._bridges.get(day)
        if found is None:
            total = self._day_start(day + 1) - self._day_start(day)
            steps = np.cumsum(np.random.default_rng([self.seed, 1, day])
                              .standard_normal(TICKS_PER_DAY))
            frac = np.arange(1, TICKS_PER_DAY + 1) / TICKS_PER_DAY
            found = np.concatenate([[0.0], (steps - frac * steps[-1] + frac * total)[:-1]])
            if len(self._bridges) >= KEPT_DAYS:
                self._bridges.pop(next(iter(self._bridges)))
            self._bridges[day] = found
        return found

    def walk(self, k0: int, k1: int) -> np.ndarray:
        """The walk (in tick steps) at ticks [k0, k1), counted from EPOCH."""
        first, last = k0 // TICKS_PER_DAY, (k1 - 1) // TICKS_PER_DAY
        days = [self._day_start(d) + self._day_bridge(d) for d in range(first, last + 1)]
        joined = np.concatenate(days)
        offset = k0 - first * TICKS_PER_DAY
        return joined[offset:offset + (k1 - k0)]

    def usd(self, walk: np.ndarray) -> np.ndarray:
        """Prices in USD for walk values (stablecoins move additively and a fiftieth as much)."""
        if self.feed.annual_vol < 0.01:
            return self.feed.price * (1.0 + walk * self.step * 0.02)
        return self.feed.price * np.exp(walk * self.step)

    def ticks(self, k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
        """USD prices and their EMA (an hour's half-life over six hours) at ticks [k0, k1)."""
        low = max(0, k0 - EMA_WINDOW_TICKS + 1)
        prices = self.usd(self.walk(low, k1))
        padded = np.concatenate([np.full(EMA_WINDOW_TICKS - 1 - (k0 - low), prices[0]), prices])
        return prices[k0 - low:], np.convolve(padded, _EMA_WEIGHTS[::-1], "valid")

    def slot_prices(self, tick: int) -> np.ndarray:
        """USD prices at the tick's slots: a bridge from this tick's price to the next's."""
        ends = self.walk(tick, tick + 2)
        steps = np.cumsum(np.random.default_rng([self.seed, 2, tick])
                          .standard_normal(SLOTS_PER_TICK)) / np.sqrt(SLOTS_PER_TICK)
        frac = np.arange(SLOTS_PER_TICK) / SLOTS_PER_TICK
        inner = np.concatenate([[0.0], steps[:-1]]) - frac * steps[-1]
        return self.usd(ends[0] + frac * (ends[1] - ends[0]) + inner)

    def units(self, usd: float) -> int:
        """A USD figure in the feed's integer units."""
        return round(usd * self.scale)

    def previous_slot(self, slot: int) -> int | None:
        """The last slot before `slot` at which the market was open."""
        if self.hours.always_open:
            return slot - 1
        session = self.hours.last_session_before(slot_time(slot))
        if session is None:
            return None
        last = int(np.ceil(session[1] * SLOTS_PER_SECOND - 1e-9)) - 1
        return last if slot_time(last) >= session[0] else None

    def _tick_state(self, tick: int) -> tuple[np.ndarray, float]:
        """The tick's slot prices and EMA, kept while live readers walk its 25 slots."""
        if self._tick is None or self._tick[0] != tick:
            self._tick = (tick, self.slot_prices(tick), float(self.ticks(tick, tick + 1)[1][0]))
        return self._tick[1], self._tick[2]

    def update(self, slot: int) -> SlotUpdate:
        """The feed's update at `slot` (whether or not the market publishes then)."""
        tick, within = divmod(slot - EPOCH * 5 // 2, SLOTS_PER_TICK)
        slots, ema = self._tick_state(tick)
        price = float(slots[within])
        previous = self.previous_slot(slot)
        publish = publish_second(slot)
        return SlotUpdate(
            price=self.units(price), conf=self.units(price * CONF_RATIO),
            ema_price=self.units(ema), ema_conf=self.units(ema * CONF_RATIO),
            publish_time=publish,
            prev_publish_time=publish if previous is None else publish_second(previous),
            slot=slot - SLOT_EPOCH * 5 // 2)
