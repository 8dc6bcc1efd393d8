"""The wallet rounds in the ledger's layers: those closed in a layer by its first second, those
open at its end by its last, shared between snapshots; a round is its last part's row. By
hand."""

from datetime import UTC, datetime

import polars as pl

from assets.snapshot.wallet_tables import wallet_rounds
from assets.wallets.positions import assemble_rounds
from core.store import LocalStore
from publish.cursor import CursorSigner
from publish.reader import OBJECTS, load_snapshot
from publish.wallets import ROUND_BOOKS, ROUND_KEY
from publish.writer import Publisher
from tests.assets.test_wallet_positions import AS_OF, DAY, HOUR, layers, ledger

SYMBOLS = pl.DataFrame({"chain_id": [1], "token": ["t"], "token_symbol": ["T"]})
HOUR_START = 2 * DAY + 2 * HOUR
BOOK = [("w0", "t", 100, "buy", 1.0, 1.0), ("w0", "t", 200, "sell", 1.0, 2.0),  # closed, day 0
        ("w3", "t", 300, "buy", 2.0, 2.0),                                   # open since day 0
        ("w1", "t", DAY, "buy", 1.0, 1.0), ("w1", "t", 2 * DAY + 60, "sell", 1.0, 3.0),
        ("w2", "t", 2 * DAY + 90, "buy", 5.0, 5.0)]                          # open since day 2


def publish(publisher: Publisher, book: list, as_of: int, minute: int):
    stored = ledger(book)
    table = wallet_rounds(layers(stored, as_of), lambda rows: assemble_rounds(rows, as_of),
                          SYMBOLS)
    return publisher.publish(datetime(2026, 11, 20, 0, minute, tzinfo=UTC), [], {},
                             tables=[table])


def test_closed_rounds_keep_their_spans_and_open_ones_their_layers(tmp_path) -> None:
    store = LocalStore(tmp_path / "store")
    publisher = Publisher(store, CursorSigner(b"k"))
    first = publish(publisher, BOOK, AS_OF, 0)
    parts = first.tables["wallet_rounds"]["parts"]
    # Day 0's layer: w0's round closed in it, w3's open at its end; day 1's: w1's open at its
    # end (none closed); day 2's before 02:00: w1's closed (its last row), w2's open at 02:00.
    assert [(p["span"], p["rows"]) for p in parts] == [
        (0, 1), (DAY - 1, 1), (2 * DAY - 1, 1), (2 * DAY, 1), (HOUR_START - 1, 1)]
    written = set(store.keys(OBJECTS))
    # In the hour, w3 sells all it holds (its round closes) and w0 buys again (its round 1).
    later = [*BOOK, ("w3", "t", HOUR_START + 10, "sell", 2.0, 4.0),
             ("w0", "t", HOUR_START + 20, "buy", 1.0, 1.0)]
    second = publish(publisher, later, AS_OF + 60, 1)
    after = second.tables["wallet_rounds"]["parts"]
    assert [(p["span"], p["rows"]) for p in after] == [
        (0, 1), (DAY - 1, 1), (2 * DAY - 1, 1), (2 * DAY, 1), (HOUR_START - 1, 1),
        (HOUR_START, 1), (HOUR_START + HOUR - 1, 1)]
    assert [p["object"] for p in after[:5]] == [p["object"] for p in parts]
    assert set(store.keys(OBJECTS)) - written == {p["object"] for p in after[5:]}
    # Each round's last part's row is the round now (w3's stale open row in day 0's layer
    # gives way to its close), but for the hold, which the edge makes.
    frames = [p.frame for p in load_snapshot(store, second.snapshot_id).parts["wallet_rounds"]]
    newest = (pl.concat(frames).unique(subset=list(ROUND_KEY), keep="last", maintain_order=True)
              .sort(ROUND_KEY))
    whole = (assemble_rounds(ledger(later), AS_OF + 60).join(SYMBOLS, on=["chain_id", "token"])
             .select(ROUND_BOOKS).sort(ROUND_KEY))
    assert newest.equals(whole)
    assert newest.filter(pl.col("wallet") == "w3")["closed_at"].to_list() == [HOUR_START + 10]
