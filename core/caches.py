"""Bounded least-recently-used caches: by entries, and by the bytes their values weigh, so that
what a long-running process derives once and reuses never grows with how long it runs."""

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class LruCache(Generic[V]):
    """Values by key; the least recently used is forgotten once `size` are held."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._held: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The value held under `key` (now the most recently used), or None."""
        found = self._held.get(key)
        if found is not None:
            self._held.move_to_end(key)
        return found

    def put(self, key: Hashable, value: V) -> V:
        """Hold `value` under `key`, forgetting the least recently used beyond `size`;
        returns `value`."""
        self._held[key] = value
        self._held.move_to_end(key)
        while len(self._held) > self.size:
            self._held.popitem(last=False)
        return value

    def pop(self, key: Hashable) -> V | None:
        """Forget the value held under `key`, returning it (None when none is)."""
        return self._held.pop(key, None)

    def values(self) -> list[V]:
        """The values held, least recently used first."""
        return list(self._held.values())

    def __contains__(self, key: Hashable) -> bool:
        return key in self._held

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        """Forget everything."""
        self._held.clear()


class ByteCache(Generic[V]):
    """Values by key, weighed in bytes: the least recently used are forgotten once the held
    ones pass `max_bytes` together, so memory stays bounded however large each value is."""

    def __init__(self, max_bytes: int, dropped: Callable[[V], None] = lambda _: None) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        # Told of each value forgotten to make room: what it holds outside memory can go too.
        self.dropped = dropped
        self._held: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The value held under `key` (now the most recently used), or None."""
        found = self._held.get(key)
        if found is None:
            return None
        self._held.move_to_end(key)
        return found[0]

    def put(self, key: Hashable, value: V, size: int) -> V:
        """Hold `value` (weighing `size` bytes) unless it alone passes the bound, forgetting the
        least recently used to make room; returns `value`."""
        self.forget(key)
        if size > self.max_bytes:
            return value
        while self._held and self.bytes + size > self.max_bytes:
            gone, weight = self._held.popitem(last=False)[1]
            self.bytes -= weight
            self.dropped(gone)
        self._held[key] = (value, size)
        self.bytes += size
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._held

    def values(self) -> list[V]:
        """The held values, least recently used first."""
        return [value for value, _ in self._held.values()]

    def forget(self, key: Hashable) -> None:
        """Drop the value held under `key`, if any."""
        old = self._held.pop(key, None)
        if old is not None:
            self.bytes -= old[1]

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        """Forget everything."""
        self._held.clear()
        self.bytes = 0
