"""Numbering fingerprints in the order they first appear, worked by hand and against a dict;
and where each number first appears."""

import numpy as np

from core.fingerprints import first_indices, numbered


def test_fingerprints_are_numbered_in_the_order_they_first_appear() -> None:
    keys = np.array([5, 9, 5, 7, 9, 0, 2**64 - 1, 0], dtype=np.uint64)
    numbers, count = numbered(keys)
    assert numbers.tolist() == [0, 1, 0, 2, 1, 3, 4, 3]
    assert count == 5


def test_the_table_grows_past_its_first_size_and_keeps_every_number() -> None:
    # 100,000 distinct fingerprints (more than half the first table's 65,536 slots, so it must
    # double, twice), each seen twice in a shuffled order; and keys that differ only in their
    # low bits, which share the top bits a slot is taken from, so probes run long.
    rng = np.random.default_rng(7)
    distinct = rng.integers(0, 2**63, 100_000, dtype=np.uint64) | np.uint64(1)
    crowded = np.arange(1_000, dtype=np.uint64) * np.uint64(2)
    keys = np.concatenate([distinct, crowded, distinct[::-1], crowded])
    rng.shuffle(keys)
    expected: dict[int, int] = {}
    for key in keys.tolist():
        expected.setdefault(key, len(expected))
    numbers, count = numbered(keys)
    assert count == len(expected) == 101_000
    assert numbers.tolist() == [expected[key] for key in keys.tolist()]


def test_each_number_keeps_the_index_it_first_appeared_at() -> None:
    # 0 first at 0, 1 at 1, 2 at 3, 3 at 6.
    numbers = np.array([0, 1, 0, 2, 1, 2, 3, 0], dtype=np.int64)
    assert first_indices(numbers, 4).tolist() == [0, 1, 3, 6]
