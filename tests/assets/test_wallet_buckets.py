"""The chart's buckets: hourly from the UTC day a week before the watermark, daily for all
time, in spans by their last second, so that a refresh sums and writes the hour's span only.
By hand."""

from datetime import UTC, datetime
from typing import Any

import polars as pl

from assets.snapshot.wallet_tables import wallet_buckets
from core.store import LocalStore
from publish.cursor import CursorSigner
from publish.reader import OBJECTS, load_snapshot
from publish.writer import Publisher, SpannedTable
from tests.assets.stored_ledger import stored_ledger

DAY, HOUR = 86_400, 3_600
# The watermark: 02:30 on day 9.
AS_OF = 9 * DAY + 2 * HOUR + 1800


def sells(*rows: tuple[int, float]) -> pl.DataFrame:
    """(ts, realized_usd) of one wallet's sells, each closing a cost of 10, and one buy."""
    return pl.DataFrame({"chain_id": 1, "wallet": "w", "side": ["buy", *("sell" for _ in rows)],
                         "ts": [0, *(ts for ts, _ in rows)],
                         "realized_usd": [0.0, *(r for _, r in rows)],
                         "cost_closed_usd": 10.0})


def every_bucket(table: SpannedTable) -> list[tuple[Any, ...]]:
    made = pl.concat([rows for _, rows in table.pieces(None)])
    return sorted(made.select("resolution", "bucket", "realized_usd", "cost_usd", "wins",
                              "losses").rows())


def test_hourly_buckets_start_at_the_day_a_week_back_and_daily_ones_go_back_all_the_way():
    # Day 2 is the UTC day a week before 02:30 on day 9: its 01:00 sell has an hourly bucket,
    # day 1's has a daily one only; the buy is in no bucket.
    made = wallet_buckets(stored_ledger(sells((DAY + 5, 1.0), (2 * DAY + HOUR + 5, -2.0),
                                            (2 * DAY + HOUR + 9, 4.0)), AS_OF), AS_OF)
    assert every_bucket(made) == [
        ("1d", DAY, 1.0, 10.0, 1, 0), ("1d", 2 * DAY, 2.0, 20.0, 1, 1),
        ("1h", 2 * DAY + HOUR, 2.0, 20.0, 1, 1)]


class Asked:
    """A table's spans asked for, publish by publish."""

    def __init__(self) -> None:
        self.wanted: list[set[Any] | None] = []

    def __call__(self, table: SpannedTable) -> SpannedTable:
        def pieces(wanted: set[Any] | None):
            self.wanted.append(wanted)
            return table.pieces(wanted)

        return SpannedTable(table.name, pieces, table.key, table.inputs)


def test_a_sell_in_the_watermarks_hour_sums_and_writes_that_hours_span_only(tmp_path):
    store = LocalStore(tmp_path / "store")
    publisher, asked = Publisher(store, CursorSigner(b"k")), Asked()
    book = [(3 * DAY + 5, 1.0), (9 * DAY + 60, 2.0), (AS_OF - 60, 3.0)]
    first = publisher.publish(datetime(2026, 11, 20, tzinfo=UTC), [], {}, tables=[
        asked(wallet_buckets(stored_ledger(sells(*book), AS_OF), AS_OF))])
    parts = first.tables["wallet_buckets"]["parts"]
    # Day 3's hourly and daily buckets; day 9's 00:00 hour; the 02:00 hour and day 9's daily
    # bucket, still filling, in the hour's span.
    hour = 9 * DAY + 2 * HOUR
    assert [(p["span"], p["rows"]) for p in parts] == [(3 * DAY, 2), (9 * DAY, 1), (hour, 2)]
    written = set(store.keys(OBJECTS))
    second = publisher.publish(datetime(2026, 11, 20, 0, 1, tzinfo=UTC), [], {}, tables=[
        asked(wallet_buckets(stored_ledger(sells(*book, (AS_OF + 30, 5.0)), AS_OF + 60), AS_OF + 60))])
    after = second.tables["wallet_buckets"]["parts"]
    # Day 0 (the buy alone) is a closed day: asked for once, found without sells, and
    # recorded so, not asked for again while its rows stay.
    assert asked.wanted == [{0, 3 * DAY, 9 * DAY, hour}, {hour}]
    assert [e["span"] for e in second.tables["wallet_buckets"]["empty"]] == [0]
    assert [p["object"] for p in after[:2]] == [p["object"] for p in parts[:2]]
    assert set(store.keys(OBJECTS)) - written == {after[2]["object"]}
    # The hour's span: 02:00's bucket and day 9's, both with the new sell.
    loaded = load_snapshot(store, second.snapshot_id).tables["wallet_buckets"]
    assert sorted(loaded.filter(pl.col("bucket") >= 9 * DAY).select(
        "resolution", "bucket", "realized_usd", "wins").rows()) == [
        ("1d", 9 * DAY, 10.0, 3), ("1h", 9 * DAY, 2.0, 1), ("1h", hour, 8.0, 2)]


def test_a_sell_changed_in_an_old_day_sums_that_days_span_again(tmp_path):
    store = LocalStore(tmp_path / "store")
    publisher, asked = Publisher(store, CursorSigner(b"k")), Asked()
    for realized in (1.0, -4.0):
        book = [(3 * DAY + 5, realized), (5 * DAY + 5, 2.0), (AS_OF - 60, 3.0)]
        manifest = publisher.publish(datetime(2026, 11, 20, tzinfo=UTC), [], {}, tables=[
            asked(wallet_buckets(stored_ledger(sells(*book), AS_OF), AS_OF))])
    assert asked.wanted[-1] == {3 * DAY}
    loaded = load_snapshot(store, manifest.snapshot_id).tables["wallet_buckets"]
    assert sorted(loaded.filter(pl.col("bucket") < 4 * DAY).select(
        "resolution", "bucket", "realized_usd", "wins", "losses").rows()) == [
        ("1d", 3 * DAY, -4.0, 0, 1), ("1h", 3 * DAY, -4.0, 0, 1)]


def test_no_sells_publish_one_empty_part_with_the_columns(tmp_path):
    store = LocalStore(tmp_path / "store")
    made = wallet_buckets(stored_ledger(sells((AS_OF - 60, 1.0)).clear(), AS_OF), AS_OF)
    manifest = Publisher(store, CursorSigner(b"k")).publish(
        datetime(2026, 11, 20, tzinfo=UTC), [], {}, tables=[made])
    [part] = manifest.tables["wallet_buckets"]["parts"]
    assert part["rows"] == 0 and part["span"] is None
    loaded = load_snapshot(store, manifest.snapshot_id).tables["wallet_buckets"]
    assert loaded.columns == ["chain_id", "wallet", "bucket", "realized_usd", "cost_usd",
                              "wins", "losses", "resolution"]
