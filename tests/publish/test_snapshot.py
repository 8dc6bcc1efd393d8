import pickle
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import orjson
import polars as pl
import pytest

from core.store import IMMUTABLE, REVALIDATE, LocalStore, S3Store
from edge.live.tail import frontier
from publish.cursor import Cursor, CursorError, CursorSigner
from publish.reader import (
    LATEST,
    OBJECTS,
    Manifest,
    forget_mapped,
    latest_id,
    load_snapshot,
    snapshot_ids,
)
from publish.spans import (
    day_of,
    span_cut,
    span_end,
    span_names,
    span_of,
    spans_in_day,
    spans_of,
)
from publish.writer import (
    ListFamily,
    PagedList,
    Publisher,
    SpannedTable,
    new_snapshot_id,
    spanned,
)
from tests.conftest import until

SIGNER = CursorSigner(b"test-secret")
AS_OF = datetime(2026, 11, 20, tzinfo=UTC)


def rows(n: int) -> PagedList:
    items = [orjson.dumps({"n": i}).decode() for i in range(n)]
    return PagedList("things", pl.DataFrame({"n": list(range(n)), "item": items}), ("n",))


def index_of(store, sid: str, where: str = "things") -> dict:
    return orjson.loads(store.get(f"snapshots/{sid}/lists/{where}/index.json").body)


def walk(store, sid: str, where: str = "things") -> list[int]:
    """What a CDN consumer does: the list's index, then each page it names, in order."""
    seen = []
    for entry in index_of(store, sid, where)["pages"]:
        seen += [item["n"] for item in orjson.loads(store.get(entry["object"]).body)["items"]]
    return seen


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return LocalStore(tmp_path / "store")
    request.getfixturevalue("s3_env")
    bucket = f"snap-{int(time.time() * 1e6)}"
    boto3.client("s3").create_bucket(Bucket=bucket)
    return S3Store(bucket, "prefix")


def test_a_store_lists_keys_by_prefix_and_the_names_one_level_down(store):
    for key in ("a/1/x", "a/2/y", "a/22/z", "b/3"):
        store.put(key, b"-", "text/plain", IMMUTABLE)
    store.delete(["a/2/y"])
    assert store.keys("a/2") == ["a/22/z"]
    assert store.keys("a/") == ["a/1/x", "a/22/z"]
    assert store.keys("") == ["a/1/x", "a/22/z", "b/3"]
    assert store.children("a/") == ["1", "22"]
    assert store.children("c/") == []


def test_a_published_list_can_be_walked_page_by_page(store):
    manifest = Publisher(store, SIGNER).publish(AS_OF, [rows(120)], {"doc": {"a": 1}})
    assert latest_id(store) == manifest.snapshot_id
    assert walk(store, manifest.snapshot_id) == list(range(120))
    index = index_of(store, manifest.snapshot_id)
    assert (index["snapshot_id"], index["as_of"], index["rows"]) == (
        manifest.snapshot_id, "2026-11-20T00:00:00Z", 120)
    first, second, last = index["pages"]
    assert first["prev_cursor"] is None and last["next_cursor"] is None
    assert SIGNER.decode(first["next_cursor"]) == Cursor(manifest.snapshot_id, "things", 50)
    assert SIGNER.decode(second["prev_cursor"]) == Cursor(manifest.snapshot_id, "things", 0)
    assert manifest.lists["things"] | {"rows": 120, "pages": 3} == manifest.lists["things"]
    assert manifest.format == 2


def test_a_page_whose_items_did_not_change_is_shared_and_pruned_with_the_last_snapshot(store):
    """Rows 0-119 in pages of 50: a change to row 60 changes the second page only. Each
    snapshot's index still carries its own cursors. Two lists of the same items share pages."""
    publisher = Publisher(store, SIGNER, retention=timedelta(hours=1), keep=1)
    t0 = datetime(2026, 11, 20, tzinfo=UTC)
    changed = rows(120)
    changed = PagedList("things", changed.frame.with_columns(item=pl.when(pl.col("n") == 60)
                        .then(pl.lit('{"n": 60, "moved": true}')).otherwise("item")), ("n",))
    first = publisher.publish(AS_OF, [rows(120)], {}, now=t0)
    second = publisher.publish(AS_OF + timedelta(minutes=1), [
        changed, PagedList("same", changed.frame, ("n",), served=False)], {},
        now=t0 + timedelta(minutes=1))
    before = [p["object"] for p in index_of(store, first.snapshot_id)["pages"]]
    after = index_of(store, second.snapshot_id)
    objects = [p["object"] for p in after["pages"]]
    assert objects[0] == before[0] and objects[2] == before[2] and objects[1] != before[1]
    assert [p["object"] for p in index_of(store, second.snapshot_id, "same")["pages"]] == objects
    pages = [k for k in store.keys(OBJECTS) if k.startswith(f"{OBJECTS}pages/")]
    assert sorted(pages) == sorted({*before, *objects})
    assert SIGNER.decode(after["pages"][0]["next_cursor"]).snapshot_id == second.snapshot_id
    assert walk(store, second.snapshot_id, "same") == list(range(120))
    # The first snapshot goes past the window with the third publish: its second page, which
    # no kept snapshot names, goes with it; the pages the kept one names stay.
    publisher.publish(AS_OF + timedelta(minutes=2), [changed], {},
                      now=t0 + timedelta(hours=2))
    assert snapshot_ids(store)[0] != first.snapshot_id
    pages = [k for k in store.keys(OBJECTS) if k.startswith(f"{OBJECTS}pages/")]
    assert sorted(pages) == sorted(objects)


def test_every_object_carries_type_cache_control_and_etag(store):
    manifest = Publisher(store, SIGNER).publish(AS_OF, [rows(3)], {"doc": {"a": 1}})
    index = store.get(f"snapshots/{manifest.snapshot_id}/lists/things/index.json")
    assert (index.content_type, index.cache_control) == ("application/json", IMMUTABLE)
    assert index.etag == manifest.objects["lists/things/index.json"]["etag"]
    [entry] = orjson.loads(index.body)["pages"]
    page = store.get(entry["object"])
    assert (page.content_type, page.cache_control) == ("application/json", IMMUTABLE)
    assert page.etag == manifest.objects[entry["object"]]["etag"]
    [part] = manifest.lists["things"]["parts"]
    table = store.get(part["object"])
    assert table.etag == manifest.objects[part["object"]]["etag"]
    assert table.content_type == "application/vnd.apache.parquet"
    assert store.get(LATEST).cache_control == REVALIDATE
    loaded = load_snapshot(store, manifest.snapshot_id)
    assert loaded.tables["things"]["n"].to_list() == [0, 1, 2]
    assert orjson.loads(loaded.documents["doc"]) == {"a": 1}


def test_old_snapshots_go_after_the_retention_window_but_the_newest_stay(store):
    publisher = Publisher(store, SIGNER, retention=timedelta(hours=1), keep=2)
    t0 = datetime(2026, 11, 20, tzinfo=UTC)
    ids = [publisher.publish(AS_OF, [rows(2)], {}, now=t0 + timedelta(minutes=40 * i)).snapshot_id
           for i in range(5)]
    # at t0+160min the cutoff is t0+100min: snapshots at 0, 40 and 80 minutes are past it
    assert snapshot_ids(store) == ids[3:]


DAY = 86_400


def trade_frame(*days: tuple[int, int]) -> pl.DataFrame:
    """(day, rows) trades: alternately of pairs p0 and p1, a second apart from the day's start."""
    rows = [(f"p{n % 2}", day * DAY + n) for day, count in days for n in range(count)]
    return pl.DataFrame(rows, schema={"pair": pl.String, "ts": pl.Int64}, orient="row")


def trades(*days: tuple[int, int], made: list | None = None,
           inputs: dict[int, str] | None = None) -> SpannedTable:
    """A table of (day, rows) trades, keyed by pair then time, split by day; `made` records the
    spans asked for, `inputs` names each day's inputs."""
    frame = trade_frame(*days)

    def pieces(wanted):
        if made is not None:
            made.append(wanted)
        return ((day, rows) for day, rows in spans_of(frame, day_of())
                if wanted is None or day in wanted)

    return SpannedTable("trades", pieces, ("pair", "ts"),
                        None if inputs is None else lambda: inputs)


def test_a_snapshot_shares_the_parts_whose_rows_did_not_change(store):
    publisher = Publisher(store, SIGNER)
    first = publisher.publish(AS_OF, [], {}, tables=[trades((0, 3), (1, 2))])
    written = set(store.keys(OBJECTS))
    # Day 1 gains a trade; day 0 is as it was.
    second = publisher.publish(AS_OF + timedelta(minutes=5), [], {},
                               tables=[trades((0, 3), (1, 3))])
    before, after = first.tables["trades"]["parts"], second.tables["trades"]["parts"]
    assert [p["span"] for p in after] == [0, 1] and [p["rows"] for p in after] == [3, 3]
    assert after[0]["object"] == before[0]["object"]
    assert after[1]["object"] != before[1]["object"]
    # One new object: the changed day's part; the unchanged one was not written again.
    assert set(store.keys(OBJECTS)) - written == {after[1]["object"]}
    assert second.objects[after[0]["object"]] == first.objects[before[0]["object"]]
    # Each part is sorted by the key on its own: pair, then time.
    loaded: dict[str, pl.DataFrame] = {}
    old, new = (load_snapshot(store, m.snapshot_id, loaded) for m in (first, second))
    assert new.parts["trades"][0].frame is old.parts["trades"][0].frame
    assert new.parts["trades"][1].frame.rows() == [("p0", DAY), ("p0", DAY + 2),
                                                  ("p1", DAY + 1)]
    assert new.tables["trades"].height == 6


def test_a_table_made_a_day_at_a_time_has_its_days_as_parts_each_sorted_by_key(tmp_path):
    store = LocalStore(tmp_path / "store")
    frame = trade_frame((0, 3), (2, 2))
    made = []

    def days(wanted):
        for day in (0, 1, 2):
            made.append(day)
            yield day, frame.filter(pl.col("ts") // DAY == day)

    manifest = Publisher(store, SIGNER).publish(
        AS_OF, [], {}, tables=[SpannedTable("trades", days, ("pair", "ts"))])
    # Day 1 has no trades: no part.
    assert [(p["span"], p["rows"]) for p in manifest.tables["trades"]["parts"]] == [(0, 3), (2, 2)]
    assert made == [0, 1, 2]
    loaded = load_snapshot(store, manifest.snapshot_id)
    assert loaded.tables["trades"].rows() == [("p0", 0), ("p0", 2), ("p1", 1),
                                              ("p0", 2 * DAY), ("p1", 2 * DAY + 1)]


def test_a_day_whose_inputs_are_named_as_before_is_not_made_again(store):
    publisher = Publisher(store, SIGNER)
    first_made: list = []
    first = publisher.publish(AS_OF, [], {}, tables=[
        trades((0, 3), (1, 2), made=first_made, inputs={0: "a", 1: "b"})])
    # Nothing to go by before the first snapshot: every day is made.
    assert first_made == [{0, 1}]
    written = set(store.keys(OBJECTS))
    # Day 1's inputs changed (it gained a trade), day 0's did not; day 2 is new.
    made: list = []
    second = publisher.publish(AS_OF + timedelta(minutes=5), [], {}, tables=[
        trades((0, 3), (1, 3), (2, 1), made=made, inputs={0: "a", 1: "c", 2: "d"})])
    assert made == [{1, 2}]
    before, after = first.tables["trades"]["parts"], second.tables["trades"]["parts"]
    assert [(p["span"], p["rows"], p["inputs"]) for p in after] == [(0, 3, "a"), (1, 3, "c"),
                                                                   (2, 1, "d")]
    assert after[0] == before[0]
    assert second.objects[after[0]["object"]] == first.objects[before[0]["object"]]
    assert set(store.keys(OBJECTS)) - written == {after[1]["object"], after[2]["object"]}
    loaded = load_snapshot(store, second.snapshot_id)
    assert loaded.tables["trades"]["ts"].to_list() == [0, 2, 1, DAY, DAY + 2, DAY + 1, 2 * DAY]
    # Named as before but for a table the previous snapshot does not have: made.
    made = []
    publisher.publish(AS_OF, [], {}, tables=[
        SpannedTable("other", trades((0, 3), made=made).pieces, ("pair", "ts"),
                     lambda: {0: "a"})])
    assert made == [{0}]


def test_a_span_name_changes_with_its_own_rows_and_with_what_every_span_is_made_with():
    frame = trade_frame((0, 2), (1, 2), (3, 1))
    names = span_names(frame, day_of(), "v1")
    assert list(names) == [0, 1, 3]
    # The same rows in the same order within each day, the days interleaved: the same names.
    shuffled = pl.concat([frame[2:3], frame[0:1], frame[3:5], frame[1:2]])
    assert span_names(shuffled, day_of(), "v1") == names
    changed = frame.with_columns(pair=pl.when(pl.col("ts") == DAY).then(pl.lit("p9"))
                                 .otherwise("pair"))
    moved = span_names(changed, day_of(), "v1")
    assert [moved[d] == names[d] for d in (0, 1, 3)] == [True, False, True]
    assert all(span_names(frame, day_of(), "v2")[d] != names[d] for d in names)
    # Rows swapped within a day: the day's name changes (a part's rows are in order).
    swapped = pl.concat([frame[1:2], frame[0:1], frame[2:]])
    assert span_names(swapped, day_of(), "v1")[0] != names[0]


def test_the_watermark_hour_is_a_span_of_its_own_and_the_rest_go_by_day():
    # The watermark is 02:30 on day 2 (unix seconds): its hour starts at 02:00.
    as_of = 2 * DAY + 2 * 3600 + 1800
    frame = pl.DataFrame({"ts": [5, DAY - 1, DAY + 7200, 2 * DAY, 2 * DAY + 7199,
                                 2 * DAY + 7200, 2 * DAY + 9000]})
    labels = frame.select(span_of(as_of)).to_series().to_list()
    assert labels == [0, 0, DAY, 2 * DAY, 2 * DAY, 2 * DAY + 7200, 2 * DAY + 7200]
    assert spans_in_day(DAY, as_of) == [DAY]
    assert spans_in_day(2 * DAY, as_of) == [2 * DAY, 2 * DAY + 7200]
    # In a day's first hour, the hour and the day are one span.
    assert spans_in_day(2 * DAY, 2 * DAY + 60) == [2 * DAY]


def test_with_the_closing_hour_a_closed_days_last_hour_is_a_span_of_its_own():
    # The watermark is 02:30 on day 2: days 0 and 1 are closed.
    as_of = 2 * DAY + 2 * 3600 + 1800
    frame = pl.DataFrame({"ts": [5, DAY - 3601, DAY - 3600, DAY - 1, DAY + 82_799, DAY + 82_800,
                                 2 * DAY + 7199, 2 * DAY + 7200, None]})
    labels = frame.select(span_of(as_of, closing_hour=True)).to_series().to_list()
    assert labels == [0, 0, DAY - 3600, DAY - 3600, DAY, 2 * DAY - 3600, 2 * DAY,
                      2 * DAY + 7200, 2 * DAY + 7200]
    assert spans_in_day(0, as_of, closing_hour=True) == [0, DAY - 3600]
    assert spans_in_day(2 * DAY, as_of, closing_hour=True) == [2 * DAY, 2 * DAY + 7200]
    # At 23:30 the day's hour is its last: the same two spans as once it is closed.
    late = 2 * DAY + 23 * 3600 + 1800
    assert spans_in_day(2 * DAY, late, closing_hour=True) == [2 * DAY, 3 * DAY - 3600]
    assert [span_end(label, as_of, closing_hour=True) for label in (0, DAY - 3600, 2 * DAY,
                                                                   2 * DAY + 7200)] == [
        DAY - 3600, DAY, 2 * DAY + 7200, None]
    assert [span_end(label, late, closing_hour=True) for label in (2 * DAY, 3 * DAY - 3600)] \
        == [3 * DAY - 3600, None]
    # Without it a closed day is one span to its end.
    assert span_end(0, as_of) == DAY


def test_spans_are_cut_behind_the_most_lagging_live_chain_but_never_before_the_day():
    # 10:02 on day 2; a live chain four minutes behind still adds rows at 09:58.
    as_of = 2 * DAY + 10 * 3600 + 120
    assert span_cut(as_of, 240) == as_of - 240
    assert span_cut(as_of, 0) == as_of
    # Its 09:58 row is in the cut's span, with the rest of 09:00 and 10:00; 08:59 is not.
    rows = pl.DataFrame({"ts": [2 * DAY + 8 * 3600 + 3599, as_of - 240, as_of]})
    cut = span_cut(as_of, 240)
    assert rows.select(span_of(cut)).to_series().to_list() == [2 * DAY, 2 * DAY + 9 * 3600,
                                                                2 * DAY + 9 * 3600]
    # At 00:02 the cut stays in the day: the day before keeps its part.
    assert span_cut(2 * DAY + 120, 240) == 2 * DAY


def test_the_watermark_hour_gaining_trades_leaves_the_rest_of_its_day_unwritten(store):
    """The day's name changes when its hour does, so the whole day is made again; the part of
    the day before the hour comes out as before and is found by its rows, not written."""
    def today(counts: dict[int, int], as_of: int, name: str) -> SpannedTable:
        frame = pl.DataFrame([(f"p{n % 2}", DAY + hour * 3600 + n)
                              for hour, count in counts.items() for n in range(count)],
                             schema={"pair": pl.String, "ts": pl.Int64}, orient="row")

        def pieces(wanted):
            return ((label, rows) for label, rows in spans_of(frame, span_of(as_of))
                    if wanted is None or label in wanted)

        return SpannedTable("trades", pieces, ("pair", "ts"),
                            lambda: dict.fromkeys(spans_in_day(DAY, as_of), name))

    publisher = Publisher(store, SIGNER)
    first = publisher.publish(AS_OF, [], {}, tables=[today({0: 3, 1: 2, 2: 2}, DAY + 7300, "a")])
    written = set(store.keys(OBJECTS))
    # The watermark's hour (02:00) gains a trade; hours 0 and 1 are as they were.
    second = publisher.publish(AS_OF + timedelta(minutes=1), [], {},
                               tables=[today({0: 3, 1: 2, 2: 3}, DAY + 7360, "b")])
    before, after = first.tables["trades"]["parts"], second.tables["trades"]["parts"]
    assert [(p["span"], p["rows"]) for p in after] == [(DAY, 5), (DAY + 7200, 3)]
    assert after[0]["object"] == before[0]["object"] and after[0]["inputs"] == "b"
    assert set(store.keys(OBJECTS)) - written == {after[1]["object"]}


def test_a_table_at_hand_in_spans_writes_only_the_span_that_gained_rows(store):
    """Day 0, the morning of day 1 and the watermark's hour (day 1, 02:00) are three parts; an
    update in the hour changes its part only."""
    def updates(hour_times: list[int]) -> pl.DataFrame:
        times = [5, 60, DAY + 10, DAY + 3700, *(DAY + 7200 + t for t in hour_times)]
        return pl.DataFrame({"feed": ["b", "a"] * (len(times) // 2) + ["a"] * (len(times) % 2),
                             "publish_time": times})

    publisher = Publisher(store, SIGNER)
    as_of = DAY + 7300
    first = publisher.publish(AS_OF, [], {}, tables=[spanned(
        "history", updates([1]), ("feed", "publish_time"), span_of(as_of, "publish_time"))])
    written = set(store.keys(OBJECTS))
    second = publisher.publish(AS_OF + timedelta(minutes=1), [], {}, tables=[spanned(
        "history", updates([1, 2]), ("feed", "publish_time"),
        span_of(as_of + 60, "publish_time"))])
    before, after = first.tables["history"]["parts"], second.tables["history"]["parts"]
    assert [(p["span"], p["rows"]) for p in after] == [(0, 2), (DAY, 2), (DAY + 7200, 2)]
    assert [p["object"] for p in after[:2]] == [p["object"] for p in before[:2]]
    assert set(store.keys(OBJECTS)) - written == {after[2]["object"]}
    # Each part sorted by its key: day 0 holds (b, 5) and (a, 60).
    loaded = load_snapshot(store, second.snapshot_id)
    assert loaded.parts["history"][0].frame.rows() == [("a", 60), ("b", 5)]


def test_a_table_without_rows_is_one_empty_part_with_its_columns(tmp_path):
    store = LocalStore(tmp_path / "store")
    empty = pl.DataFrame(schema={"pair": pl.String, "ts": pl.Int64})
    spanned = SpannedTable("trades", lambda wanted: iter([(0, empty), (1, empty)]),
                           ("pair", "ts"))
    manifest = Publisher(store, SIGNER).publish(AS_OF, [], {}, tables=[spanned])
    [part] = manifest.tables["trades"]["parts"]
    assert (part["rows"], part["span"], manifest.tables["trades"]["rows"]) == (0, None, 0)
    assert load_snapshot(store, manifest.snapshot_id).tables["trades"].schema == empty.schema


def two_days_then_one_more_trade(tmp_path) -> tuple[LocalStore, Manifest, Manifest, Path]:
    """A store holding two snapshots of trades: days 0 and 1, then day 1 with one trade more
    (day 0 shared); and a directory for the parts kept locally."""
    store = LocalStore(tmp_path / "store")
    publisher = Publisher(store, SIGNER)
    first = publisher.publish(AS_OF, [], {}, tables=[trades((0, 3), (1, 2))])
    second = publisher.publish(AS_OF + timedelta(minutes=5), [], {},
                               tables=[trades((0, 3), (1, 3))])
    return store, first, second, tmp_path / "mapped"


def test_parts_are_mapped_from_one_local_file_each(tmp_path):
    store, first, second, mapped = two_days_then_one_more_trade(tmp_path)
    old = load_snapshot(store, first.snapshot_id, {}, mapped)
    made = {f.name: f.stat().st_ino for f in mapped.glob("*.arrow")}
    assert len(made) == 2
    # Another process (its own loaded parts) maps the shared day from the same file.
    new = load_snapshot(store, second.snapshot_id, {}, mapped)
    now = {f.name: f.stat().st_ino for f in mapped.glob("*.arrow")}
    assert len(now) == 3 and {k: now[k] for k in made} == made
    assert new.tables["trades"].equals(load_snapshot(store, second.snapshot_id).tables["trades"])
    assert new.tables["trades"].height == 6
    # Only the first snapshot's day 1 is no longer named by the second.
    named = {p["object"] for p in second.tables["trades"]["parts"]}
    gone = forget_mapped(mapped, named, older_than_s=0)
    assert [g.stem for g in gone] == [Path(first.tables["trades"]["parts"][1]["object"]).stem]
    # What maps it still reads it.
    assert old.tables["trades"]["ts"].to_list() == [0, 2, 1, DAY, DAY + 1]


def test_pruning_removes_the_parts_no_kept_snapshot_names(store):
    publisher = Publisher(store, SIGNER, retention=timedelta(hours=1), keep=2)
    t0 = datetime(2026, 11, 20, tzinfo=UTC)
    # Day 0 never changes; day 1 changes at every publish.
    manifests = [publisher.publish(AS_OF, [], {}, now=t0 + timedelta(minutes=40 * i),
                                   tables=[trades((0, 2), (1, 1 + i))]) for i in range(5)]
    kept = manifests[3:]
    assert snapshot_ids(store) == [m.snapshot_id for m in kept]
    named = {p["object"] for m in kept for p in m.tables["trades"]["parts"]}
    # The day-0 part, written by the first snapshot, is named by the kept ones and stays;
    # the first three day-1 parts went with their snapshots.
    assert set(store.keys(OBJECTS)) == named and len(named) == 3
    for m in kept:
        assert load_snapshot(store, m.snapshot_id).tables["trades"].height == 2 + 1 + \
            manifests.index(m)


def test_a_forged_or_altered_cursor_is_refused():
    good = SIGNER.encode(Cursor("s", "things", 50))
    body, sig = good.split(".")
    with pytest.raises(CursorError):
        SIGNER.decode(body + "." + sig[::-1])
    with pytest.raises(CursorError):
        CursorSigner(b"other").decode(good)
    with pytest.raises(CursorError):
        SIGNER.decode("x" * 513)


SLOW_PUBLISH = """
import sys, time, orjson, polars as pl
from datetime import UTC, datetime
from publish.cursor import CursorSigner
from publish.writer import PagedList, Publisher
from core.store import LocalStore

class Slow(LocalStore):
    def put(self, key, body, content_type, cache_control):
        time.sleep(0.05)
        return super().put(key, body, content_type, cache_control)

items = [orjson.dumps({"n": i}).decode() for i in range(5000)]
frame = pl.DataFrame({"n": list(range(5000)), "item": items})
Publisher(Slow(sys.argv[1]), CursorSigner(b"k")).publish(
    datetime(2026, 11, 21, tzinfo=UTC), [PagedList("things", frame, ("n",))], {})
"""


def test_a_publish_killed_half_way_leaves_the_previous_snapshot_served_and_intact(tmp_path):
    store = LocalStore(tmp_path / "store")
    old = Publisher(store, CursorSigner(b"k")).publish(AS_OF, [rows(120)], {"doc": {"a": 1}})
    pages = len(store.keys("objects/pages/"))
    proc = subprocess.Popen([sys.executable, "-c", SLOW_PUBLISH, str(tmp_path / "store")])
    # Killed half-way: the new snapshot begun, some of its ~100 pages written and not all (its
    # own keys, the list's index and manifest, come after the pages, a put before the last).
    until(lambda: len(snapshot_ids(store)) == 2
          and len(store.keys("objects/pages/")) >= pages + 3, timeout=30, what="a publish begun")
    proc.kill()
    proc.wait()
    assert len(snapshot_ids(store)) == 2, "the new snapshot had started"
    assert latest_id(store) == old.snapshot_id
    assert walk(store, old.snapshot_id) == list(range(120))
    assert load_snapshot(store, old.snapshot_id).tables["things"].height == 120


def test_rows_that_come_back_after_a_snapshot_without_them_survive_pruning_of_the_first(store):
    publisher = Publisher(store, SIGNER, retention=timedelta(hours=1), keep=1)
    t0 = datetime(2026, 11, 20, tzinfo=UTC)
    # Day 0's rows are A, then B, then A again; only the first snapshot is past the window by
    # the third publish, and the one after it, which lacks A, is kept.
    manifests = [publisher.publish(AS_OF, [], {}, now=t0 + timedelta(minutes=minutes),
                                   tables=[trades(d)])
                 for minutes, d in ((0, (0, 2)), (70, (0, 3)), (80, (0, 2)))]
    first, second, third = (m.tables["trades"]["parts"][0]["object"] for m in manifests)
    assert snapshot_ids(store) == [m.snapshot_id for m in manifests[1:]]
    # Written again by the third rather than named from the first: pruning the first took its
    # object, not the third's.
    assert third != first
    assert set(store.keys(OBJECTS)) == {second, third}
    assert load_snapshot(store, manifests[2].snapshot_id).tables["trades"].height == 2


def test_pruning_a_publish_that_died_before_its_manifest_removes_the_objects_it_wrote(store):
    publisher = Publisher(store, SIGNER, retention=timedelta(hours=1), keep=1)
    t0 = datetime(2026, 11, 20, tzinfo=UTC)
    first = publisher.publish(AS_OF, [], {}, now=t0, tables=[trades((0, 2))])
    # A publish killed after writing a part of its own and before its manifest.
    dead = new_snapshot_id(t0 + timedelta(minutes=10), AS_OF)
    store.put(f"snapshots/{dead}/lists/x/1.json", b"{}", "application/json", IMMUTABLE)
    orphan = f"{OBJECTS}{'ab' * 20}-{dead}.parquet"
    store.put(orphan, b"PAR1", "application/vnd.apache.parquet", IMMUTABLE)
    later = publisher.publish(AS_OF, [], {}, now=t0 + timedelta(hours=2), tables=[trades((0, 2))])
    assert snapshot_ids(store) == [later.snapshot_id]
    assert orphan not in store.keys(OBJECTS)
    # The first snapshot's part, which the later one shares, stays.
    assert store.keys(OBJECTS) == [first.tables["trades"]["parts"][0]["object"]]


def test_a_store_sent_to_another_process_reads_the_same_objects(store):
    store.put("a/b.json", b"{}", "application/json", IMMUTABLE)
    copy = pickle.loads(pickle.dumps(store))
    assert copy is not store and copy.get("a/b.json").body == b"{}"
    assert copy.keys("a/") == ["a/b.json"]


def test_a_part_of_chain_events_names_each_chains_highest_block(tmp_path):
    store = LocalStore(tmp_path / "store")
    day0 = pl.DataFrame({"chain_id": [1, 1, 2], "pair": ["a", "b", "a"],
                         "block_number": [7, 5, 40], "log_index": [0, 0, 0]})
    day1 = pl.DataFrame({"chain_id": [1, 1], "pair": ["a", "c"], "block_number": [9, 12],
                         "log_index": [0, 1]})
    spanned = SpannedTable("trades", lambda wanted: iter([(0, day0), (DAY, day1)]),
                           ("chain_id", "pair", "block_number", "log_index"))
    manifest = Publisher(store, SIGNER).publish(AS_OF, [], {}, tables=[spanned])
    assert [p["blocks"] for p in manifest.tables["trades"]["parts"]] == [
        {"1": 7, "2": 40}, {"1": 12}]
    # Chain 1's frontier is in the second day, chain 2's in the first: read from the manifest,
    # not from the rows.
    loaded = load_snapshot(store, manifest.snapshot_id)
    loaded.tables["trades"] = loaded.tables["trades"].clear()
    assert frontier(loaded) == {1: 12, 2: 40}


def test_a_family_of_lists_named_as_before_is_carried_without_being_made(store):
    """Two lists made from one input: published again from the same inputs, they are the same
    pages and envelopes with cursors signed for the new snapshot, and they are not made; from
    other inputs they are made again."""
    publisher = Publisher(store, SIGNER)
    made: list[str] = []

    def family(inputs: str, n: int) -> ListFamily:
        def make() -> list[PagedList]:
            made.append(inputs)
            return [PagedList("things", rows(n).frame, ("n",), "scope-a", "ranked/a", False,
                              {"ranked_as_of": inputs}, backward=False, total=n + 80),
                    PagedList("things", rows(n // 2).frame, ("n",), "scope-b", "ranked/b",
                              False)]
        return ListFamily("ranked", inputs, make)

    first = publisher.publish(AS_OF, [family("v1", 120)], {})
    second = publisher.publish(AS_OF + timedelta(minutes=1), [family("v1", 99)], {})
    # Carried: the first snapshot's pages (120 rows, not the 99 a make would give).
    assert made == ["v1"]
    assert walk(store, second.snapshot_id, "ranked/a") == list(range(120))
    assert walk(store, second.snapshot_id, "ranked/b") == list(range(60))
    for where in ("ranked/a", "ranked/b"):
        before, after = (index_of(store, m.snapshot_id, where) for m in (first, second))
        assert [p["object"] for p in after["pages"]] == [p["object"] for p in before["pages"]]
        assert after["snapshot_id"] == second.snapshot_id != before["snapshot_id"]
        assert after["as_of"] == "2026-11-20T00:01:00Z"
        assert second.lists[where] == first.lists[where]
    index = index_of(store, second.snapshot_id, "ranked/a")
    assert index["ranked_as_of"] == "v1" and index["rows"] == 120
    # Forward only, and the list's total (200) goes past its published rows: the last page
    # still continues, on the edge, in the new snapshot.
    assert "prev_cursor" not in index["pages"][0]
    assert SIGNER.decode(index["pages"][-1]["next_cursor"]) == Cursor(
        second.snapshot_id, "things", 150, "scope-a")
    assert set(second.objects) >= {p["object"] for p in index["pages"]}
    # Other inputs: made again.
    third = publisher.publish(AS_OF + timedelta(minutes=2), [family("v2", 99)], {})
    assert made == ["v1", "v2"]
    assert walk(store, third.snapshot_id, "ranked/a") == list(range(99))


def test_blocked_tables_are_kept_compressed_read_whole_on_demand_and_forgotten(tmp_path):
    store, first, second, mapped = two_days_then_one_more_trade(tmp_path)
    old = load_snapshot(store, first.snapshot_id, {}, mapped, blocked={"trades"})
    new = load_snapshot(store, second.snapshot_id, {}, mapped, blocked={"trades"})
    # Nothing fetched when loaded: a part is fetched when first read.
    assert not mapped.exists() or not list(mapped.iterdir())
    assert "trades" not in new.tables
    # The columns from the smallest part (day 0's three rows, the first of two of three).
    assert new.schema("trades") == {"pair": pl.String, "ts": pl.Int64}
    assert [f.stem for f in mapped.glob("*.blocks")] == [
        Path(second.tables["trades"]["parts"][0]["object"]).stem]
    # Day 0's p0, p1, p0 sorted by pair then time; day 1's three.
    assert new.whole("trades").rows() == [("p0", 0), ("p0", 2), ("p1", 1),
                                          ("p0", DAY), ("p0", DAY + 2), ("p1", DAY + 1)]
    assert old.whole("trades").height == 5
    # One file of blocks per part read, none mapped whole.
    assert len(list(mapped.glob("*.blocks"))) == 3 and not list(mapped.glob("*.arrow"))
    assert new.whole("volumes") is None and new.schema("volumes") is None
    # The first snapshot's day 1 is no longer named by the second: its blocks go.
    named = {p["object"] for p in second.tables["trades"]["parts"]}
    gone = forget_mapped(mapped, named, older_than_s=0)
    assert [g.name for g in gone] == [
        Path(first.tables["trades"]["parts"][1]["object"]).stem + ".blocks"]
    assert old.whole("trades").height == 5
