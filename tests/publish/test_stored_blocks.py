"""Parts read by key, fetched when a lookup first reads them and let go past a byte bound: the
manifest names each part's first and last keys, a lookup fetches only the parts its key falls
in, and the parts held stay within the bound, each let go fetched again with the same rows.
By hand, on two chains' parts."""

import threading
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from core.store import LocalStore
from edge.spans import spans
from publish import reader
from publish.cursor import CursorSigner
from publish.reader import held_blocks_bytes, hold_blocks, load_snapshot
from publish.writer import Publisher, SpannedTable

AS_OF = datetime(2026, 11, 20, tzinfo=UTC)
KEY = ("chain_id", "wallet", "n")
# Chain 1's wallets a and b, then chain 2's a and c: a part each.
CHAIN_1 = pl.DataFrame({"chain_id": [1, 1, 1], "wallet": ["a", "b", "b"], "n": [0, 1, 2]})
CHAIN_2 = pl.DataFrame({"chain_id": [2, 2, 2], "wallet": ["a", "c", "c"], "n": [3, 4, 5]})


@pytest.fixture(autouse=True)
def bound():
    """Each test sets its own bound; the default comes back after it."""
    yield
    hold_blocks(1 << 30)


def published(tmp_path: Path, *chains: pl.DataFrame) -> tuple[LocalStore, str, dict]:
    store = LocalStore(tmp_path / "store")
    table = SpannedTable("wallet_trades", lambda wanted: ((0, rows) for rows in chains), KEY)
    manifest = Publisher(store, CursorSigner(b"k" * 32)).publish(AS_OF, [], {}, tables=[table])
    return store, manifest.snapshot_id, manifest.tables["wallet_trades"]


def test_each_part_names_its_first_and_last_keys(tmp_path) -> None:
    _, _, table = published(tmp_path, CHAIN_1, CHAIN_2)
    assert [(p["first"], p["last"]) for p in table["parts"]] == [
        ([1, "a", 0], [1, "b", 2]), ([2, "a", 3], [2, "c", 5])]


def test_a_lookup_fetches_only_the_parts_its_key_falls_in(tmp_path) -> None:
    store, sid, table = published(tmp_path, CHAIN_1, CHAIN_2)
    parts = tmp_path / "parts"
    snapshot = load_snapshot(store, sid, {}, parts, blocked={"wallet_trades"})
    assert not parts.exists()
    found = spans(snapshot, "wallet_trades", ("chain_id", "wallet"))
    assert found.rows((2, "c"))["n"].to_list() == [4, 5]
    assert [f.stem for f in parts.glob("*.blocks")] == [
        Path(table["parts"][1]["object"]).stem]
    # A key past every part's: its empty answer has the columns, of the smallest part (the
    # first of two of three rows), the one part fetched for it.
    missing = found.rows((3, "a"))
    assert missing.is_empty() and missing.columns == list(KEY)
    assert sorted(f.stem for f in parts.glob("*.blocks")) == sorted(
        Path(p["object"]).stem for p in table["parts"])


def test_parts_past_the_bound_are_let_go_and_fetched_again(tmp_path) -> None:
    store, sid, table = published(tmp_path, CHAIN_1, CHAIN_2)
    parts = tmp_path / "parts"
    found = spans(load_snapshot(store, sid, {}, parts, blocked={"wallet_trades"}),
                  "wallet_trades", ("chain_id", "wallet"))
    assert found.rows((1, "b"))["n"].to_list() == [1, 2]
    one = held_blocks_bytes()
    assert one == sum(f.stat().st_size for f in parts.glob("*.blocks")) > 0
    # Room for one part (the two are alike in size): reading the second lets the first go.
    hold_blocks(one + one // 2)
    first, second = (Path(p["object"]).stem + ".blocks" for p in table["parts"])
    assert found.rows((1, "a"))["n"].to_list() == [0]
    assert found.rows((2, "a"))["n"].to_list() == [3]
    assert sorted(f.name for f in parts.glob("*.blocks")) == [second]
    # Read again, the first comes back with its rows, and the second goes.
    assert found.rows((1, "b"))["n"].to_list() == [1, 2]
    assert sorted(f.name for f in parts.glob("*.blocks")) == [first]
    assert held_blocks_bytes() == one
    # A part larger than the bound alone is let go once read.
    hold_blocks(1)
    assert found.rows((2, "c"))["n"].to_list() == [4, 5]
    assert not list(parts.glob("*.blocks")) and held_blocks_bytes() == 0


def test_reads_from_many_threads_while_parts_are_let_go_all_answer(tmp_path) -> None:
    store, sid, _ = published(tmp_path, CHAIN_1, CHAIN_2)
    parts = tmp_path / "parts"
    found = spans(load_snapshot(store, sid, {}, parts, blocked={"wallet_trades"}),
                  "wallet_trades", ("chain_id", "wallet"))
    found.rows((1, "a"))
    # Room for one part: every read of the other lets one go, as others read it.
    hold_blocks(held_blocks_bytes() + 1)
    expected = {(1, "a"): [0], (1, "b"): [1, 2], (2, "a"): [3], (2, "c"): [4, 5]}
    wrong: list[tuple] = []

    def read(keys: list[tuple[int, str]]) -> None:
        for _ in range(50):
            for key in keys:
                got = found.rows(key)["n"].to_list()
                if got != expected[key]:
                    wrong.append((key, got))

    threads = [threading.Thread(target=read, args=([*expected][i % 4::1],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert len(list(parts.glob("*.blocks"))) <= 1


def test_a_file_another_worker_removes_as_it_is_opened_is_made_again(tmp_path,
                                                                    monkeypatch) -> None:
    store, sid, _ = published(tmp_path, CHAIN_1, CHAIN_2)
    parts = tmp_path / "parts"
    found = spans(load_snapshot(store, sid, {}, parts, blocked={"wallet_trades"}),
                  "wallet_trades", ("chain_id", "wallet"))
    made = reader.kept_locally
    removed: list[Path] = []

    def then_removed(path: Path, write) -> None:
        made(path, write)
        if not removed:
            # Found in place, then let go by another worker before it is opened.
            path.unlink()
            removed.append(path)

    monkeypatch.setattr(reader, "kept_locally", then_removed)
    assert found.rows((2, "c"))["n"].to_list() == [4, 5]
    assert len(removed) == 1 and removed[0].exists()
