"""The bounded caches: the least recently used forgotten first, by entries or by bytes."""

from core.caches import ByteCache, LruCache


def test_the_least_recently_used_entry_goes_first() -> None:
    held: LruCache[int] = LruCache(2)
    held.put("a", 1)
    held.put("b", 2)
    assert held.get("a") == 1  # a used: b is now the least recent
    held.put("c", 3)
    assert (held.get("a"), held.get("b"), held.get("c"), len(held)) == (1, None, 3, 2)
    assert held.pop("a") == 1 and held.values() == [3]


def test_bytes_forget_the_least_recently_used_once_past_their_bound() -> None:
    held: ByteCache[str] = ByteCache(max_bytes=10)
    held.put("a", "first", 4)
    held.put("b", "second", 4)
    assert held.bytes == 8
    assert held.get("a") == "first"  # a used: b goes first
    held.put("c", "third", 4)  # 12 bytes would pass 10
    assert (held.get("a"), held.get("b"), held.get("c"), held.bytes) == ("first", None, "third", 8)
    held.put("c", "again", 2)  # held anew: weighed once
    assert (held.get("c"), held.bytes) == ("again", 6)


def test_a_value_larger_than_the_bound_is_returned_but_not_held() -> None:
    held: ByteCache[str] = ByteCache(max_bytes=10)
    held.put("small", "y", 3)
    assert held.put("big", "x", 11) == "x"
    assert (held.get("big"), held.get("small"), held.bytes) == (None, "y", 3)
    # A key held before and now too large is forgotten, not left with its old value.
    assert held.put("small", "z", 11) == "z"
    assert held.get("small") is None and held.bytes == 0
