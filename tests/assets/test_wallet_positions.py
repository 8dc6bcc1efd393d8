"""The wallet positions in layers: each layer holds the positions with a ledger row in it, as
of the layer's end; a position is its newest layer's row, and a refresh in the watermark's hour
writes that hour's layer only. By hand."""

from datetime import UTC, datetime

import polars as pl
import pytest

from assets.snapshot.wallet_tables import Layers, ledger_spans, wallet_positions
from assets.wallets.positions import BOOK_INPUTS, book_positions
from core.store import LocalStore
from publish.cursor import CursorSigner
from publish.reader import OBJECTS, load_snapshot
from publish.wallets import POSITION_BOOKS
from publish.writer import Publisher
from tests.assets.stored_ledger import stored_ledger
from tests.assets.test_wallets import account

DAY, HOUR = 86_400, 3_600
# The watermark: 02:30 on day 2.
AS_OF = 2 * DAY + 2 * HOUR + 1800


def ledger(rows: list[tuple[str, str, int, str, float, float]]) -> pl.DataFrame:
    """(wallet, token, ts, side, qty, notional_usd) in chain order: a stored ledger."""
    events = pl.DataFrame(
        [{"chain_id": 1, "wallet": w, "token": t, "side": side, "qty": q, "notional_usd": n,
          "mark_usd": None, "block_number": i + 1, "log_index": 0, "seq": 0, "ts": ts,
          "price_usd": n / q, "fee_usd": None, "fee_is_estimated": False,
          "tx_hash": None, "pair": f"pool-{t}"}
         for i, (w, t, ts, side, q, n) in enumerate(rows)],
        schema_overrides={"mark_usd": pl.Float64, "fee_usd": pl.Float64, "tx_hash": pl.String})
    return account(events).drop("slot")


def layers(stored: pl.DataFrame, as_of_s: int) -> Layers:
    """The stored ledger's layers at a watermark, named by its spans."""
    days = stored_ledger(stored, as_of_s)
    return Layers(days, ledger_spans(days), BOOK_INPUTS)


def booked(rows: pl.DataFrame) -> pl.DataFrame:
    return book_positions(rows)


BOOK = [("w", "t", 100, "buy", 10.0, 20.0),                   # day 0: w holds 10 t for 20
        ("w", "u", 200, "buy", 1.0, 5.0),                     # and 1 u for 5
        ("v", "t", 2 * DAY + 60, "buy", 3.0, 9.0),            # day 2 before 02:00
        ("w", "t", 2 * DAY + 2 * HOUR + 10, "sell", 6.0, 18.0)]  # the watermark's hour


def test_the_layers_are_the_ledgers_spans_each_ending_where_the_next_begins() -> None:
    found = layers(ledger([*BOOK[:2], ("v", "u", DAY + 5, "buy", 1.0, 1.0), *BOOK[2:]]), AS_OF)
    hour = 2 * DAY + 2 * HOUR
    assert found.labels == [0, DAY, 2 * DAY, hour]
    assert [found.end(label) for label in found.labels] == [DAY, 2 * DAY, hour, None]
    assert [found.open_label(label) for label in found.labels] == [
        DAY - 1, 2 * DAY - 1, hour - 1, hour + HOUR - 1]
    # In the day's first hour the day and the hour are one layer.
    assert layers(ledger(BOOK[:3]), 2 * DAY + 60).labels == [0, 2 * DAY]


def test_each_layer_holds_its_positions_as_of_its_end_and_the_newest_is_now(tmp_path) -> None:
    store = LocalStore(tmp_path / "store")
    publisher = Publisher(store, CursorSigner(b"k"))
    first = publisher.publish(datetime(2026, 11, 20, tzinfo=UTC), [], {}, tables=[
        wallet_positions(layers(ledger(BOOK), AS_OF), booked)])
    parts = first.tables["wallet_positions"]["parts"]
    assert [(p["span"], p["rows"]) for p in parts] == [(0, 2), (2 * DAY, 1),
                                                        (2 * DAY + 2 * HOUR, 1)]
    frames = [p.frame for p in load_snapshot(store, first.snapshot_id).parts["wallet_positions"]]
    assert all(f.columns == list(POSITION_BOOKS) for f in frames)
    # Before day 2, w held 10 t (cost 20) and 1 u; in the hour, w sold 6 t of 10: 4 left at
    # a cost of 8, 18 - 12 = 6 realised.
    held = [sorted(f.select("wallet", "token", "held", "open_cost_usd", "realized_usd").rows())
            for f in frames]
    assert held == [[("w", "t", 10.0, 20.0, 0.0), ("w", "u", 1.0, 5.0, 0.0)],
                    [("v", "t", 3.0, 9.0, 0.0)],
                    [("w", "t", 4.0, pytest.approx(8.0), pytest.approx(6.0))]]
    newest = (pl.concat(frames).unique(subset=["chain_id", "wallet", "token"], keep="last",
                                        maintain_order=True).sort("wallet", "token"))
    whole = booked(ledger(BOOK)).select(POSITION_BOOKS).sort("wallet", "token")
    assert newest.equals(whole)


def test_a_refresh_in_the_hour_writes_the_hours_layer_only(tmp_path) -> None:
    store = LocalStore(tmp_path / "store")
    publisher = Publisher(store, CursorSigner(b"k"))
    first = publisher.publish(datetime(2026, 11, 20, tzinfo=UTC), [], {}, tables=[
        wallet_positions(layers(ledger(BOOK), AS_OF), booked)])
    written = set(store.keys(OBJECTS))
    later = [*BOOK, ("v", "t", AS_OF + 30, "sell", 1.0, 4.0)]
    second = publisher.publish(datetime(2026, 11, 20, 0, 1, tzinfo=UTC), [], {}, tables=[
        wallet_positions(layers(ledger(later), AS_OF + 60), booked)])
    before, after = (m.tables["wallet_positions"]["parts"] for m in (first, second))
    assert [(p["span"], p["rows"]) for p in after] == [(0, 2), (2 * DAY, 1),
                                                        (2 * DAY + 2 * HOUR, 2)]
    assert [p["object"] for p in after[:2]] == [p["object"] for p in before[:2]]
    assert set(store.keys(OBJECTS)) - written == {after[2]["object"]}


def test_a_ledger_without_rows_publishes_one_empty_part_with_the_columns(tmp_path) -> None:
    store = LocalStore(tmp_path / "store")
    manifest = Publisher(store, CursorSigner(b"k")).publish(
        datetime(2026, 11, 20, tzinfo=UTC), [], {},
        tables=[wallet_positions(layers(ledger(BOOK).clear(), AS_OF), booked)])
    [part] = manifest.tables["wallet_positions"]["parts"]
    assert (part["rows"], part["span"]) == (0, None)
    frame = load_snapshot(store, manifest.snapshot_id).tables["wallet_positions"]
    assert frame.columns == list(POSITION_BOOKS)


def test_the_days_turn_writes_yesterdays_layer_and_keeps_the_days_before(tmp_path) -> None:
    store = LocalStore(tmp_path / "store")
    publisher = Publisher(store, CursorSigner(b"k"))
    day1 = [("w", "t", 100, "buy", 10.0, 20.0), ("v", "u", 200, "buy", 2.0, 4.0),
            ("w", "t", DAY + 60, "sell", 4.0, 12.0), ("w", "t", DAY + 23 * HOUR + 100, "buy",
                                                       2.0, 6.0)]
    first = publisher.publish(datetime(2026, 11, 20, tzinfo=UTC), [], {}, tables=[
        wallet_positions(layers(ledger(day1), DAY + 23 * HOUR + 1800), booked)])
    before = first.tables["wallet_positions"]["parts"]
    assert [(p["span"], p["rows"]) for p in before] == [(0, 2), (DAY, 1), (DAY + 23 * HOUR, 1)]
    written = set(store.keys(OBJECTS))
    day2 = [*day1, ("v", "u", 2 * DAY + 60, "sell", 2.0, 6.0)]
    second = publisher.publish(datetime(2026, 11, 20, 0, 1, tzinfo=UTC), [], {}, tables=[
        wallet_positions(layers(ledger(day2), 2 * DAY + 300), booked)])
    after = second.tables["wallet_positions"]["parts"]
    assert [(p["span"], p["rows"]) for p in after] == [(0, 2), (DAY, 1), (2 * DAY, 1)]
    # Day 0's layer is kept; day 1's is made again, and its rows are those of the hour that
    # ended it (nothing traded after), so its part is that one's; day 2's is new.
    assert [p["object"] for p in after[:2]] == [before[0]["object"], before[2]["object"]]
    assert set(store.keys(OBJECTS)) - written == {after[2]["object"]}
    frames = [p.frame for p in load_snapshot(store, second.snapshot_id).parts["wallet_positions"]]
    held = [f.select("wallet", "token", "held", "open_cost_usd", "realized_usd").rows()
            for f in frames[1:]]
    # At day 1's end w holds 10 - 4 + 2 = 8 t at a cost of 20 - 8 + 6 = 18, 12 - 8 = 4
    # realised; on day 2 v sells its 2 u (cost 4) for 6.
    assert held == [[("w", "t", 8.0, pytest.approx(18.0), pytest.approx(4.0))],
                    [("v", "u", 0.0, pytest.approx(0.0), pytest.approx(2.0))]]


def test_a_quantity_renames_its_span_and_only_its_span() -> None:
    stored = ledger(BOOK)
    hour = 2 * DAY + 2 * HOUR
    names = ledger_spans(stored_ledger(stored, AS_OF))
    # A quantity is what the books are made of: it renames its span, and only its span.
    changed = ledger_spans(stored_ledger(stored.with_columns(
        qty=pl.when(pl.col("ts") >= hour).then(pl.col("qty") * 2).otherwise("qty")), AS_OF))
    assert changed[2 * DAY] == names[2 * DAY] and changed[hour] != names[hour]


def test_a_closed_layer_of_more_rows_than_a_piece_is_read_in_pieces_of_its_positions(
        tmp_path, monkeypatch) -> None:
    # Day 0 holds w's two positions, a row each; with pieces of one row they are read in two
    # pieces, each position in one of them, and the layers publish what they did whole.
    monkeypatch.setenv("CHAINTAPE_LEDGER_PIECE_ROWS", "1")
    pieces = list(layers(ledger(BOOK), AS_OF).rows(0))
    assert len(pieces) == 2
    assert sorted(r for piece in pieces for r in piece.select("wallet", "token").rows()) == [
        ("w", "t"), ("w", "u")]
    store = LocalStore(tmp_path / "store")
    made = Publisher(store, CursorSigner(b"k")).publish(
        datetime(2026, 11, 20, tzinfo=UTC), [], {},
        tables=[wallet_positions(layers(ledger(BOOK), AS_OF), booked)])
    parts = load_snapshot(store, made.snapshot_id).parts["wallet_positions"]
    spans = [p["span"] for p in made.tables["wallet_positions"]["parts"]]
    held = sorted((span, *row) for span, part in zip(spans, parts, strict=True)
                  for row in part.frame.select("wallet", "token", "held", "open_cost_usd").rows())
    assert held == [(0, "w", "t", 10.0, 20.0), (0, "w", "u", 1.0, 5.0),
                    (2 * DAY, "v", "t", 3.0, 9.0), (2 * DAY + 2 * HOUR, "w", "t", 4.0,
                                                     pytest.approx(8.0))]
