"""Finding a key's rows in parts sorted by key: by binary search in one part or in each of
several, the same rows either way; a frame in any order (a live tail's table) sorted once and
searched the same way; a part kept as compressed blocks, by its blocks' bounds then within
them."""

import io
from datetime import date

import polars as pl

from core.store import LocalStore
from edge.spans import SortedKeys, Spans, frame_spans, keys_of, sorted_spans
from publish.reader import PARQUET, Blocks, block_part

ROWS = pl.DataFrame({"chain_id": [1, 1, 1, 2, 2, 2],
                     "wallet": ["a", "b", "b", "a", "c", "c"],
                     "n": [0, 1, 2, 3, 4, 5]})


def test_a_key_is_found_column_by_column() -> None:
    keys = SortedKeys(ROWS, ("chain_id", "wallet"))
    assert keys.get((1, "b")) == (1, 2)
    assert keys.get((2, "a")) == (3, 1)
    assert keys.get((2, "c")) == (4, 2)
    assert keys.get((1, "c")) is None and keys.get((3, "a")) is None
    assert SortedKeys(ROWS, ("chain_id",)).get((2,)) == (3, 3)
    assert SortedKeys(ROWS.clear(), ("chain_id", "wallet")).get((1, "a")) is None


def test_a_frame_and_its_day_parts_give_the_same_rows_in_order() -> None:
    whole = frame_spans(ROWS, ("chain_id", "wallet"))
    days = (ROWS.slice(0, 2), ROWS.slice(2, 4))  # two parts, each sorted by the key
    keys = ("chain_id", "wallet")
    parts = Spans(tuple(SortedKeys(day, keys) for day in days))
    assert parts.rows((1, "b"))["n"].to_list() == [1, 2] == whole.rows((1, "b"))["n"].to_list()
    assert parts.rows((2, "c"))["n"].to_list() == [4, 5]
    assert parts.rows((9, "z")).is_empty() and parts.rows((9, "z")).columns == ROWS.columns


def test_a_frame_in_any_order_is_searched_with_each_keys_rows_in_their_order() -> None:
    # A tail's trades in block order, pairs interleaved: "x" then "y" then "x" again.
    tail = pl.DataFrame({"chain_id": [2, 1, 2, 1, 2],
                         "pair": ["x", "y", "y", "y", "x"],
                         "block": [10, 11, 12, 13, 14]})
    found = sorted_spans(tail, ("chain_id", "pair"))
    assert found.rows((2, "x"))["block"].to_list() == [10, 14]
    assert found.rows((1, "y"))["block"].to_list() == [11, 13]
    assert found.rows((2, "y"))["block"].to_list() == [12]
    assert found.rows((1, "x")).is_empty()
    assert found.row((1, "y")) == {"chain_id": 1, "pair": "y", "block": 11}
    assert found.row((1, "x")) is None
    assert sorted_spans(tail.clear(), ("chain_id", "pair")).row((2, "x")) is None


def test_a_keys_last_rows_are_read_from_the_last_parts_back() -> None:
    # Key (1, "b") has rows 1 and 2 in the first part and 6 and 7 in the last; (2, "a") only
    # row 3 in the first.
    first = ROWS.slice(0, 4)
    last = pl.DataFrame({"chain_id": [1, 1, 2], "wallet": ["b", "b", "c"], "n": [6, 7, 8]})
    keys = ("chain_id", "wallet")
    parts = Spans((SortedKeys(first, keys), SortedKeys(last, keys)))
    assert parts.tail((1, "b"), 1)["n"].to_list() == [7]
    assert parts.tail((1, "b"), 3)["n"].to_list() == [2, 6, 7]
    assert parts.tail((1, "b"), 9)["n"].to_list() == [1, 2, 6, 7]
    assert parts.tail((2, "a"), 2)["n"].to_list() == [3]
    assert parts.tail((9, "z"), 2).is_empty()
    assert parts.tail((1, "b"), 0).is_empty()


def test_rows_since_an_instant_pass_over_the_parts_that_end_before_it() -> None:
    # Three day parts starting at 0, 100 and 200; key (1, "b") has rows in each.
    days = tuple(pl.DataFrame({"chain_id": [1], "wallet": ["b"], "ts": [t]})
                 for t in (10, 150, 250))
    keys = ("chain_id", "wallet")
    parts = Spans(tuple(SortedKeys(day, keys) for day in days), (0, 100, 200))
    assert parts.rows((1, "b"))["ts"].to_list() == [10, 150, 250]
    # Since 100: the first part ends where the second begins, at 100.
    assert parts.rows((1, "b"), since=100)["ts"].to_list() == [150, 250]
    # Since 99: the first part may still hold a row at 99.
    assert parts.rows((1, "b"), since=99)["ts"].to_list() == [10, 150, 250]
    assert parts.rows((1, "b"), since=10_000)["ts"].to_list() == [250]
    # Without spans nothing is passed over.
    assert Spans(parts.at).rows((1, "b"), since=10_000).height == 3
    # A span in two parts (a chain's each): since 150, the first span's parts are passed over
    # and both of the second span's are read, the one whose next part starts with it too.
    chains = tuple(pl.DataFrame({"chain_id": [c], "wallet": ["b"], "ts": [t]})
                   for c, t in ((1, 10), (1, 150), (2, 160), (1, 250)))
    both = Spans(tuple(SortedKeys(day, keys) for day in chains), (0, 100, 100, 200))
    assert both.rows((1, "b"), since=150)["ts"].to_list() == [150, 250]
    assert both.rows((2, "b"), since=150)["ts"].to_list() == [160]
    assert both.rows((2, "b"), since=200).is_empty()


def _blocks(tmp_path, frame: pl.DataFrame, key: tuple[str, ...], rows: int) -> Blocks:
    """`frame` stored as a part and kept as blocks of `rows` rows."""
    store = LocalStore(tmp_path / "store")
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    store.put("objects/part.parquet", buffer.getvalue(), PARQUET, "no-cache")
    return block_part(store, "objects/part.parquet", tmp_path / "parts", key, rows)


def test_a_blocked_part_gives_a_keys_rows_from_the_blocks_it_falls_in(tmp_path) -> None:
    # Blocks of two rows: [0 1] [2 3] [4 5]; (1, "b") spans the first two, (2, "c") is the last
    # block, (1, "a") the first row alone.
    blocks = _blocks(tmp_path, ROWS, ("chain_id", "wallet", "n"), 2)
    assert blocks.firsts == [(1, "a", 0), (1, "b", 2), (2, "c", 4)]
    assert blocks.lasts == [(1, "b", 1), (2, "a", 3), (2, "c", 5)]
    found = Spans((keys_of(blocks, ("chain_id", "wallet")),))
    assert found.rows((1, "b"))["n"].to_list() == [1, 2]
    assert found.rows((1, "a"))["n"].to_list() == [0]
    assert found.rows((2, "a"))["n"].to_list() == [3]
    assert found.rows((2, "c"))["n"].to_list() == [4, 5]
    # Between two blocks' keys, before the first and past the last: none.
    assert found.rows((1, "bb")).is_empty() and found.rows((0, "z")).is_empty()
    assert found.rows((3, "a")).columns == ROWS.columns
    assert found.tail((1, "b"), 1)["n"].to_list() == [2]
    assert found.row((2, "a")) == {"chain_id": 2, "wallet": "a", "n": 3}
    # By the chain alone: its rows across every block they are in.
    by_chain = Spans((keys_of(blocks, ("chain_id",)),))
    assert by_chain.rows((2,))["n"].to_list() == [3, 4, 5]
    assert blocks.whole().equals(ROWS)


def test_blocks_are_bounded_by_the_leading_key_columns_of_plain_types(tmp_path) -> None:
    # Keyed by chain then day (a date): the bounds name the chain alone, and a lookup by chain
    # and day reads the chain's blocks and finds the day's rows among them.
    rows = pl.DataFrame({"chain_id": [1, 1, 1, 2, 2, 2],
                         "day": [date(2026, 1, d) for d in (1, 2, 2, 1, 3, 3)],
                         "n": [0, 1, 2, 3, 4, 5]})
    blocks = _blocks(tmp_path, rows, ("chain_id", "day"), 2)
    assert blocks.key == ("chain_id",)
    assert blocks.firsts == [(1,), (1,), (2,)] and blocks.lasts == [(1,), (2,), (2,)]
    found = Spans((keys_of(blocks, ("chain_id", "day")),))
    assert found.rows((1, date(2026, 1, 2)))["n"].to_list() == [1, 2]
    assert found.rows((2, date(2026, 1, 3)))["n"].to_list() == [4, 5]
    assert found.rows((1, date(2026, 1, 3))).is_empty()


def test_an_empty_blocked_part_has_its_columns(tmp_path) -> None:
    blocks = _blocks(tmp_path, ROWS.clear(), ("chain_id", "wallet"), 2)
    assert (blocks.height, blocks.firsts, blocks.schema) == (0, [], ROWS.schema)
    found = Spans((keys_of(blocks, ("chain_id", "wallet")),))
    assert found.rows((1, "a")).is_empty() and found.rows((1, "a")).schema == ROWS.schema
    assert blocks.whole().schema == ROWS.schema
