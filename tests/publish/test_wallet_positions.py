"""The wallet positions in layers: each layer holds the positions with a ledger row in it, as
of the layer's end; a position is its newest layer's row, and a refresh in the watermark's hour
writes that hour's layer only. By hand."""

from datetime import UTC, datetime

import polars as pl
import pytest

from assets.wallets.positions import BOOK_INPUTS, book_positions
from core.store import LocalStore
from publish.cursor import CursorSigner
from publish.reader import OBJECTS, load_snapshot
from publish.spans import layer_ends, layer_of
from publish.wallets import POSITION_BOOKS, Layers, ledger_spans, wallet_positions
from publish.writer import Publisher
from tests.assets.test_wallets import account
from tests.publish.ledger_days import ledger_days

DAY, HOUR = 86_400, 3_600
# The watermark: 02:30 on day 2.
AS_OF = 2 * DAY + 2 * HOUR + 1800


def ledger(rows: list[tuple[str, str, int, str, float, float]]) -> pl.DataFrame:
    """(wallet, token, ts, side, qty, notional_usd) in chain order: a stored ledger."""
    events = pl.DataFrame(
        [{"chain_id": 1, "wallet": w, "token": t, "side": side, "qty": q, "notional_usd": n,
          "mark_usd": None, "block_number": i + 1, "log_index": 0, "seq": 0, "ts": ts,
          "price_usd": n / q, "fee_usd": None, "fee_is_estimated": False, "swap": i,
          "tx_hash": None, "pair": f"pool-{t}"}
         for i, (w, t, ts, side, q, n) in enumerate(rows)],
        schema_overrides={"mark_usd": pl.Float64, "fee_usd": pl.Float64, "tx_hash": pl.String})
    return account(events).drop("slot")


def layers(stored: pl.DataFrame, as_of_s: int) -> Layers:
    """The stored ledger's layers at a watermark, named by its spans."""
    days = ledger_days(stored, as_of_s)
    return Layers(days, ledger_spans(days), BOOK_INPUTS)


def booked(rows: pl.DataFrame) -> pl.DataFrame:
    return book_positions(rows)


BOOK = [("w", "t", 100, "buy", 10.0, 20.0),                   # day 0: w holds 10 t for 20
        ("w", "u", 200, "buy", 1.0, 5.0),                     # and 1 u for 5
        ("v", "t", 2 * DAY + 60, "buy", 3.0, 9.0),            # day 2 before 02:00
        ("w", "t", 2 * DAY + 2 * HOUR + 10, "sell", 6.0, 18.0)]  # the watermark's hour


def test_layers_split_at_the_watermark_day_and_hour() -> None:
    labels = pl.DataFrame({"ts": [0, 2 * DAY - 1, 2 * DAY, 2 * DAY + 2 * HOUR]}).select(
        layer_of(AS_OF)).to_series().to_list()
    assert labels == [0, 0, 2 * DAY, 2 * DAY + 2 * HOUR]
    assert layer_ends(AS_OF) == {0: 2 * DAY, 2 * DAY: 2 * DAY + 2 * HOUR,
                                 2 * DAY + 2 * HOUR: None}
    # In the day's first hour the day and the hour are one layer.
    assert layer_ends(2 * DAY + 60) == {0: 2 * DAY, 2 * DAY: None}


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
