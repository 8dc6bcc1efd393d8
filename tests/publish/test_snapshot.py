import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import orjson
import polars as pl
import pytest

from publish.cursor import Cursor, CursorError, CursorSigner
from publish.snapshot import (
    LATEST,
    OBJECTS,
    PagedList,
    Publisher,
    ServingTable,
    SpannedTable,
    day_of,
    forget_mapped,
    latest_id,
    load_snapshot,
    snapshot_ids,
)
from publish.store import IMMUTABLE, REVALIDATE, LocalStore, S3Store

SIGNER = CursorSigner(b"test-secret")
AS_OF = datetime(2026, 11, 20, tzinfo=UTC)


def rows(n: int) -> PagedList:
    items = [orjson.dumps({"n": i}).decode() for i in range(n)]
    return PagedList("things", pl.DataFrame({"n": list(range(n)), "item": items}), ("n",))


def walk(store, sid: str) -> list[int]:
    """What a CDN consumer does: first page, then each page's links.next."""
    key = f"snapshots/{sid}/lists/things/1.json"
    seen = []
    while key:
        page = orjson.loads(store.get(key).body)
        seen += [item["n"] for item in page["items"]]
        nxt = page["links"]["next"]
        key = f"snapshots/{sid}/lists/things/{nxt}" if nxt else None
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
    first = orjson.loads(store.get(f"snapshots/{manifest.snapshot_id}/lists/things/1.json").body)
    assert first["prev_cursor"] is None
    assert SIGNER.decode(first["next_cursor"]) == Cursor(manifest.snapshot_id, "things", 50)
    assert manifest.lists["things"] | {"rows": 120, "pages": 3} == manifest.lists["things"]


def test_every_object_carries_type_cache_control_and_etag(store):
    manifest = Publisher(store, SIGNER).publish(AS_OF, [rows(3)], {"doc": {"a": 1}})
    page = store.get(f"snapshots/{manifest.snapshot_id}/lists/things/1.json")
    assert (page.content_type, page.cache_control) == ("application/json", IMMUTABLE)
    assert page.etag == manifest.objects["lists/things/1.json"]["etag"]
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


def trades(*days: tuple[int, int]) -> ServingTable:
    """A table of (day, rows) trades, keyed by pair then time, split by day."""
    rows = [(f"p{n % 2}", day * DAY + n) for day, count in days for n in range(count)]
    frame = pl.DataFrame(rows, schema={"pair": pl.String, "ts": pl.Int64}, orient="row")
    return ServingTable("trades", frame, ("pair", "ts"), day_of())


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


def test_a_table_made_a_day_at_a_time_has_the_parts_of_the_whole_table_split_by_day(tmp_path):
    store = LocalStore(tmp_path / "store")
    whole = trades((0, 3), (2, 2))
    made = []

    def days():
        for day in (0, 1, 2):
            made.append(day)
            yield day, whole.frame.filter(pl.col("ts") // DAY == day)

    spanned = SpannedTable("trades", days, ("pair", "ts"))
    first = Publisher(store, SIGNER).publish(AS_OF, [], {}, tables=[whole])
    second = Publisher(store, SIGNER).publish(AS_OF, [], {}, tables=[spanned])
    # Day 1 has no trades: no part, as when the whole table is split.
    assert second.tables["trades"] == first.tables["trades"]
    assert [p["span"] for p in second.tables["trades"]["parts"]] == [0, 2] and made == [0, 1, 2]


def test_a_table_without_rows_is_one_empty_part_with_its_columns(tmp_path):
    store = LocalStore(tmp_path / "store")
    empty = pl.DataFrame(schema={"pair": pl.String, "ts": pl.Int64})
    spanned = SpannedTable("trades", lambda: iter([(0, empty), (1, empty)]), ("pair", "ts"))
    manifest = Publisher(store, SIGNER).publish(AS_OF, [], {}, tables=[spanned])
    [part] = manifest.tables["trades"]["parts"]
    assert (part["rows"], part["span"], manifest.tables["trades"]["rows"]) == (0, None, 0)
    assert load_snapshot(store, manifest.snapshot_id).tables["trades"].schema == empty.schema


def test_parts_are_mapped_from_one_local_file_each(tmp_path):
    store = LocalStore(tmp_path / "store")
    publisher = Publisher(store, SIGNER)
    first = publisher.publish(AS_OF, [], {}, tables=[trades((0, 3), (1, 2))])
    second = publisher.publish(AS_OF + timedelta(minutes=5), [], {},
                               tables=[trades((0, 3), (1, 3))])
    mapped = tmp_path / "mapped"
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
from publish.snapshot import PagedList, Publisher
from publish.store import LocalStore

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
    proc = subprocess.Popen([sys.executable, "-c", SLOW_PUBLISH, str(tmp_path / "store")])
    deadline = time.monotonic() + 30
    while len(snapshot_ids(store)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    assert len(snapshot_ids(store)) == 2, "the new snapshot had started"
    assert latest_id(store) == old.snapshot_id
    assert walk(store, old.snapshot_id) == list(range(120))
    assert load_snapshot(store, old.snapshot_id).tables["things"].height == 120
