"""A feed's trading schedule in the oracle convention: `TZ;MON,TUE,WED,THU,FRI,SAT,SUN;HOLIDAYS`.

Each day is `O` (open all day), `C` (closed) or `HHMM-HHMM` ranges joined by `&`, in the
zone's local time; holidays are `MMDD/<day spec>` items separated by commas.
"""

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import cached_property
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

# How far ahead next_open and next_close look before saying "not within a fortnight".
HORIZON_DAYS = 14


def _ranges(spec: str) -> tuple[tuple[int, int], ...]:
    """A day spec as [start, end) minute ranges of the local day."""
    if spec == "O":
        return ((0, 1440),)
    if spec == "C":
        return ()
    out = []
    for part in spec.split("&"):
        start, _, end = part.partition("-")
        low = int(start[:2]) * 60 + int(start[2:])
        high = int(end[:2]) * 60 + int(end[2:])
        if not 0 <= low < high <= 1440:
            raise ValueError(f"bad trading range {part!r}")
        out.append((low, high))
    return tuple(out)


@dataclass(frozen=True)
class MarketHours:
    """When a feed's market is open, from its schedule string."""

    schedule: str

    @cached_property
    def _parsed(self) -> tuple[ZoneInfo, tuple[Any, ...], dict[str, tuple[Any, ...]]]:
        zone, _, rest = self.schedule.partition(";")
        days, _, holidays = rest.partition(";")
        weekly = tuple(_ranges(d) for d in days.split(","))
        if len(weekly) != 7:
            raise ValueError(f"schedule {self.schedule!r} does not name seven days")
        special = {}
        for item in filter(None, holidays.split(",")):
            day, _, spec = item.partition("/")
            special[day] = _ranges(spec)
        return ZoneInfo(zone), weekly, special

    @property
    def always_open(self) -> bool:
        """Open every minute of every day, with no holidays."""
        _, weekly, special = self._parsed
        return not special and all(r == ((0, 1440),) for r in weekly)

    def _day(self, day: date) -> tuple[tuple[int, int], ...]:
        _, weekly, special = self._parsed
        return special.get(day.strftime("%m%d"), weekly[day.weekday()])

    def _intervals(self, at: float) -> list[tuple[float, float]]:
        """Open [start, end) intervals in unix seconds around `at`, adjacent ones merged."""
        zone = self._parsed[0]
        today = datetime.fromtimestamp(at, zone).date()
        merged: list[list[float]] = []
        for offset in range(-1, HORIZON_DAYS + 1):
            day = today + timedelta(days=offset)
            midnight = datetime.combine(day, time(), zone)
            for low, high in self._day(day):
                start = (midnight + timedelta(minutes=low)).timestamp()
                end = (midnight + timedelta(minutes=high)).timestamp()
                if merged and merged[-1][1] >= start:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([start, end])
        return [(s, e) for s, e in merged]

    def is_open(self, at: float) -> bool:
        """Whether the market is open at unix time `at`."""
        if self.always_open:
            return True
        return any(s <= at < e for s, e in self._intervals(at))

    def next_open(self, at: float) -> float | None:
        """When a closed market next opens (None when open now, or not within the horizon)."""
        if self.always_open:
            return None
        intervals = self._intervals(at)
        if any(s <= at < e for s, e in intervals):
            return None
        return next((s for s, _ in intervals if s > at), None)

    def next_close(self, at: float) -> float | None:
        """When an open market next closes (None when closed now, or never within the horizon)."""
        if self.always_open:
            return None
        for s, e in self._intervals(at):
            if s <= at < e:
                return e
        return None

    def last_session_before(self, at: float) -> tuple[float, float] | None:
        """The latest open [start, end) interval that starts before `at`, its end cut at `at`
        (None when the market was closed for the whole horizon back)."""
        if self.always_open:
            return (at - 86_400.0, at)
        zone = self._parsed[0]
        back = datetime.fromtimestamp(at, zone) - timedelta(days=HORIZON_DAYS)
        earlier = [(s, min(e, at)) for s, e in self._intervals(back.timestamp()) if s < at]
        return earlier[-1] if earlier else None

    def open_mask(self, times: np.ndarray) -> np.ndarray:
        """Whether the market is open at each unix time of `times` (vectorised by local day)."""
        if self.always_open or len(times) == 0:
            return np.ones(len(times), dtype=bool)
        zone = self._parsed[0]
        first = datetime.fromtimestamp(float(times.min()), zone).date() - timedelta(days=1)
        last = datetime.fromtimestamp(float(times.max()), zone).date() + timedelta(days=1)
        starts, ends = [], []
        day = first
        while day <= last:
            midnight = datetime.combine(day, time(), zone)
            for low, high in self._day(day):
                starts.append((midnight + timedelta(minutes=low)).timestamp())
                ends.append((midnight + timedelta(minutes=high)).timestamp())
            day += timedelta(days=1)
        if not starts:
            return np.zeros(len(times), dtype=bool)
        starts_a, ends_a = np.array(starts), np.array(ends)
        i = np.searchsorted(starts_a, times, side="right") - 1
        inside = i >= 0
        return inside & (times < ends_a[np.clip(i, 0, None)])

