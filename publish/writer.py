"""Writing snapshots: immutable sets of lists, documents and serving tables, flipped live by
LATEST. Serving tables' parts and lists' pages are content-addressed objects under
`objects/`, which a snapshot shares with its predecessor wherever their rows are the same."""

import hashlib
import io
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import polars as pl

from core.store import IMMUTABLE, REVALIDATE, ObjectStore
from publish.cursor import Cursor, CursorSigner
from publish.reader import (
    JSON,
    LATEST,
    OBJECTS,
    PARQUET,
    Manifest,
    SharedObjects,
    bounded_key,
    latest_id,
    objects_of,
    shared_objects,
    snapshot_ids,
    stored_manifest,
    writer_of,
)
from publish.spans import fingerprint, spans_of

# The first object of a snapshot, before anything it shares.
STARTED = "started.json"
# List pages, named by their items: shared objects like the parts.
PAGES = f"{OBJECTS}pages/"
# Documents published once and kept for good, outside any snapshot (closed seasons).
FROZEN = "frozen/"
PAGE_SIZE = 50
# The layout of the published lists this publisher writes (the manifest's `format`).
LIST_FORMAT = 2


@dataclass(frozen=True)
class PagedList:
    """A list published as pages; `frame` holds index columns and `item` (the row's JSON).

    Its cursors carry `name` and `scope` (the query it answers), so the edge continues a
    published page; `path` places its pages (default `name`); `served` also publishes `frame`
    as a table the edge pages itself; `envelope` adds fields to every page; a list that only
    pages forward (`backward` false) carries no `prev_cursor`."""

    name: str
    frame: pl.DataFrame
    key: tuple[str, ...]
    scope: str = ""
    path: str | None = None
    served: bool = True
    envelope: dict[str, Any] = field(default_factory=dict)
    backward: bool = True
    total: int | None = None

    @property
    def where(self) -> str:
        """Where the pages go under `lists/`."""
        return self.path or self.name


@dataclass(frozen=True)
class ListFamily:
    """Lists made together from what `inputs` names (every wallet ranking, from the stored
    rankings and the chains listed): a publish whose family's `inputs` are the previous
    snapshot's carries the family's lists as they were (the same pages and envelopes, the
    cursors signed for the new snapshot), and `make` is never called."""

    name: str
    inputs: str
    make: Callable[[], list[PagedList]]


@dataclass(frozen=True)
class ServingTable:
    """A table the edge looks rows up in, published as Parquet sorted by `key`."""

    name: str
    frame: pl.DataFrame
    key: tuple[str, ...]


@dataclass(frozen=True)
class SpannedTable:
    """A serving table in one part per span (a UTC day of trades, the watermark's hour apart:
    `span_of`), each sorted by `key`, so that the parts whose rows did not change are shared
    with the previous snapshot.

    `pieces(wanted)` yields the label and rows of each span in `wanted` (every span when None),
    in span order, so that a publish holds one span rather than the table. `inputs`, when
    given, names what each span's rows are made from (every span's label, even one without
    rows): a span whose name is the previous snapshot's takes that snapshot's part as it is,
    and its rows are never made."""

    name: str
    pieces: Callable[[set[Any] | None], Iterator[tuple[Any, pl.DataFrame]]]
    key: tuple[str, ...]
    inputs: Callable[[], Mapping[Any, str]] | None = None


def spanned(name: str, frame: pl.DataFrame, key: tuple[str, ...], span: pl.Expr) -> SpannedTable:
    """A table at hand as a serving table in spans (`span_of`): every span is split off it
    each time, and one whose rows came out as before is the previous snapshot's part."""
    return SpannedTable(name, lambda wanted: spans_of(frame, span), key)


def stored(name: str, read: Callable[[], pl.DataFrame], key: tuple[str, ...],
           inputs: str) -> SpannedTable:
    """A serving table made whole from stored rows that `inputs` names (the files they are read
    from and the code that selects them): a snapshot whose `inputs` are the previous one's
    keeps that snapshot's part as it is, and `read` is never called."""
    def pieces(wanted: set[Any] | None) -> Iterator[tuple[Any, pl.DataFrame]]:
        if wanted is None or WHOLE in wanted:
            yield WHOLE, read()

    return SpannedTable(name, pieces, key, lambda: {WHOLE: inputs})


# The one span of a table made whole (`stored`).
WHOLE = 0


def new_snapshot_id(at: datetime, as_of: datetime) -> str:
    """Sortable by publication time; the suffix tells apart snapshots published together."""
    digest = f"{at.isoformat()}|{as_of.isoformat()}".encode()
    return f"{at.strftime('%Y%m%dT%H%M%S%f')}Z-{hashlib.sha256(digest).hexdigest()[:8]}"


def instant_text(t: datetime) -> str:
    """An instant as a snapshot names it (`as_of`, `snapshot_at`): ISO 8601 in UTC, `Z`."""
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Publisher:
    """Writes one snapshot, then LATEST, then prunes snapshots past the retention window."""

    def __init__(self, store: ObjectStore, signer: CursorSigner,
                 retention: timedelta = timedelta(hours=24), keep: int = 3,
                 progress: Callable[[str], None] = lambda _: None) -> None:
        self.store, self.signer = store, signer
        self.retention, self.keep, self.progress = retention, keep, progress

    def publish(self, as_of: datetime, lists: list[PagedList | ListFamily],
                documents: dict[str, object],
                now: datetime | None = None,
                tables: Iterable["ServingTable | SpannedTable"] = (),
                frozen: Mapping[str, object] | None = None,
                lake_versions: Mapping[str, int] | None = None,
                warehouse_versions: Mapping[str, int] | None = None) -> Manifest:
        """Publish everything under a new snapshot id and make it the latest; `tables` may be
        made one at a time as they are taken. A `frozen`
        document is written once under `frozen/` and never rewritten; the manifest names it,
        the lake versions the products were computed from and the products' own versions."""
        now = now or datetime.now(UTC)
        sid = new_snapshot_id(now, as_of)
        manifest = Manifest(sid, instant_text(as_of), instant_text(now),
                            lake_versions=dict(lake_versions or {}),
                            warehouse_versions=dict(warehouse_versions or {}), format=LIST_FORMAT)
        base = f"snapshots/{sid}"
        # Listed once: listing every snapshot's keys is the costliest read of a publish.
        ids = snapshot_ids(self.store)
        # Written first, so that a publish that dies before its manifest is a snapshot pruning
        # finds, with the objects it wrote.
        self.store.put(f"{base}/{STARTED}", orjson.dumps({"as_of": manifest.as_of,
                                                          "snapshot_at": manifest.snapshot_at}),
                       JSON, IMMUTABLE)
        previous = self._previous(ids)
        shared = objects_of(previous)
        # Pages written by this publish by their items' name: two lists may hold the same.
        pages: dict[str, str] = {}
        # One line per top-level name of lists (`wallets/…`: every chain, window and sort), not
        # per list: each line is an event the run's log stores.
        tallies: dict[str, _Tally] = {}
        started = time.perf_counter()
        for paged, family in self._lists(lists, previous, shared):
            if isinstance(paged, str):
                where = paged
                meta, written = self._carry(base, sid, as_of, where, previous, manifest, shared)
            else:
                where = paged.where
                meta, objects, written = self._list(base, sid, as_of, paged, manifest, shared,
                                                    pages)
                if family is not None:
                    meta["family"] = {"name": family.name, "inputs": family.inputs,
                                      "objects": objects, **_carried_fields(paged)}
            manifest.lists[where] = meta
            done = time.perf_counter()
            tallies.setdefault(where.split("/")[0], _Tally()).add(
                meta["rows"], meta["pages"], written, done - started)
            started = done
        for name, tally in tallies.items():
            self.progress(f"{name}: {tally}")
        started = time.perf_counter()
        for table in tables:
            parts, empty = self._parts(table, manifest, shared, previous)
            rows = sum(part["rows"] for part in parts)
            manifest.tables[table.name] = {"rows": rows, "key": list(table.key), "parts": parts,
                                           **({"empty": empty} if empty else {})}
            written = sum(1 for part in parts if part["object"] not in shared)
            self.progress(f"{table.name}: {rows} rows (serving table, "
                          f"{written} of {len(parts)} part(s) written, "
                          f"{time.perf_counter() - started:.1f}s)")
            started = time.perf_counter()
            # Let go before the next table is built: `tables` may make them one at a time.
            del table
        for name, doc in documents.items():
            key = f"documents/{name}.json"
            self._put(manifest, base, key, orjson.dumps(doc), JSON)
            manifest.documents[name] = key
        self._freeze(manifest, frozen or {})
        self.store.put(f"{base}/manifest.json", manifest.to_json(), JSON, IMMUTABLE)
        pointer = {"snapshot_id": sid, "as_of": manifest.as_of, "snapshot_at": manifest.snapshot_at,
                   "manifest": f"{base}/manifest.json"}
        self.store.put(LATEST, orjson.dumps(pointer), JSON, REVALIDATE)
        self.progress(f"published snapshot {sid} ({len(manifest.objects)} objects)")
        self.prune(now, [*ids, sid])
        return manifest

    def _previous(self, ids: list[str]) -> dict[str, Any]:
        """The manifest of the newest snapshot that has one (empty before the first publish):
        its shared objects a new snapshot need not write again. Always the newest, so that the
        snapshots naming one object follow one another, which is what pruning relies on."""
        for sid in reversed(ids):
            found = stored_manifest(self.store, sid)
            if found is not None:
                return found
        return {}

    def _parts(self, table: "ServingTable | SpannedTable", manifest: Manifest,
               shared: "SharedObjects", previous: Mapping[str, Any]
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Store a serving table's parts (in span order, each sorted by key, if it has one),
        writing only those the previous snapshot does not already hold, and making only the
        spans whose inputs changed. A table without rows is one empty part, which carries its
        columns. Also the named spans that came out without rows, with their inputs, so that
        the next snapshot need not make them again either."""
        names, kept, empty = _kept_spans(table, shared, previous)
        for part in kept:
            manifest.objects[part["object"]] = shared[part["object"]]
        wanted = None if isinstance(table, ServingTable) or table.inputs is None \
            else set(names) - {part["span"] for part in kept} - {e["span"] for e in empty}
        parts: list[dict[str, Any]] = list(kept)
        spare = None
        for label, piece in _pieces(table, wanted):
            if piece.is_empty():
                spare = piece if spare is None else spare
                continue
            made = self._part(label, piece.sort(table.key) if table.key else piece,
                              manifest, shared, table.key)
            parts.append(made | ({"inputs": names[label]} if label in names else {}))
        if not parts and spare is not None:
            parts.append(self._part(None, spare, manifest, shared))
        # A table without rows is made again each time: it needs its one empty part.
        filled = {part["span"] for part in parts if part["rows"]}
        empty = [] if not filled else empty + [
            {"span": label, "inputs": names[label]} for label in sorted(wanted or ())
            if label not in filled]
        # In span order, whatever order the pieces came in (a span may be made a chain at a
        # time, each with parts of several spans); a span's parts keep theirs.
        return sorted(parts, key=lambda part: part["span"]), empty

    def _part(self, label: Any, piece: pl.DataFrame, manifest: Manifest,
              shared: "SharedObjects", key_of: Sequence[str] = ()) -> dict[str, Any]:
        rows = fingerprint(piece)
        key = shared.by_name.get(rows)
        if key is not None:
            manifest.objects[key] = shared[key]
        else:
            # Named by its writer too: rows that come back after a snapshot without them are
            # written again as a new object, so the snapshots naming one object always follow
            # one another (what pruning relies on), and a publish that dies before its manifest
            # leaves objects that name it (which pruning removes with it).
            key = f"{OBJECTS}{rows}-{manifest.snapshot_id}.parquet"
            etag = self.store.put(key, (body := _parquet(piece)), PARQUET, IMMUTABLE)
            manifest.objects[key] = {"etag": etag, "bytes": len(body), "content_type": PARQUET}
        return {"object": key, "rows": piece.height, "span": label, **_blocks(piece),
                **_key_bounds(piece, key_of)}

    def _lists(self, lists: list[PagedList | ListFamily], previous: Mapping[str, Any],
               shared: "SharedObjects") -> Iterator[tuple[PagedList | str, ListFamily | None]]:
        """Each list to publish, with its family: made, or, for a family the previous snapshot
        published from the same inputs with every page still held, the name of each of its
        previous lists to carry."""
        for entry in lists:
            if isinstance(entry, PagedList):
                yield entry, None
                continue
            before = {where: meta for where, meta in previous.get("lists", {}).items()
                      if meta.get("family", {}).get("name") == entry.name}
            if before and all(meta["family"]["inputs"] == entry.inputs
                              and set(_objects_of(meta)) <= shared.keys()
                              for meta in before.values()):
                yield from ((where, entry) for where in before)
            else:
                yield from ((paged, entry) for paged in entry.make())

    def _carry(self, base: str, sid: str, as_of: datetime, where: str,
               previous: Mapping[str, Any], manifest: Manifest,
               shared: "SharedObjects") -> tuple[dict[str, Any], int]:
        """A list of the previous snapshot, carried: its pages and envelope as they were, its
        index signed for this snapshot. Its manifest entry, and no page written."""
        meta = previous["lists"][where]
        family = meta["family"]
        for key in _objects_of(meta):
            manifest.objects[key] = shared[key]
        paged = PagedList(family["list"], pl.DataFrame(), tuple(meta["key"]), family["scope"],
                          where, False, family["envelope"], family["backward"], family["total"])
        self._index(base, sid, as_of, paged, family["objects"], meta["rows"], manifest)
        return dict(meta), 0

    def _index(self, base: str, sid: str, as_of: datetime, paged: PagedList,
               objects: list[str], rows: int, manifest: Manifest) -> None:
        """A list's index: its envelope and its pages' objects with the cursors signed for this
        snapshot."""
        total = max(paged.total or 0, rows)
        entries = []
        for n, key in enumerate(objects):
            entry: dict[str, Any] = {"object": key, "next_cursor": self._cursor(
                sid, paged, (n + 1) * PAGE_SIZE, total)}
            if paged.backward:
                entry["prev_cursor"] = self._cursor(sid, paged, (n - 1) * PAGE_SIZE, total) \
                    if n else None
            entries.append(entry)
        index = {**paged.envelope, "snapshot_id": sid, "as_of": instant_text(as_of),
                 "rows": rows, "page_size": PAGE_SIZE, "pages": entries}
        self._put(manifest, base, f"lists/{paged.where}/index.json", orjson.dumps(index), JSON)

    def _list(self, base: str, sid: str, as_of: datetime, paged: PagedList, manifest: Manifest,
              shared: "SharedObjects", pages: dict[str, str]
              ) -> tuple[dict[str, Any], list[str], int]:
        """Store a list's pages, each named by its items (a page whose items the previous
        snapshot holds is not written again), and its index: the envelope, each page's object
        and the cursors signed for this snapshot. Its manifest entry, its pages' objects, and
        how many of them it wrote."""
        frame, where = paged.frame, paged.where
        meta: dict[str, Any] = {"key": list(paged.key)}
        if paged.served:
            meta["parts"] = self._parts(ServingTable(where, frame, ()), manifest, shared, {})[0]
        items = frame["item"].to_list()
        objects, written = [], 0
        for n in range(max(1, -(-len(items) // PAGE_SIZE))):
            body = page_items(items[n * PAGE_SIZE:(n + 1) * PAGE_SIZE])
            key, fresh = self._page(body, manifest, shared, pages)
            written += fresh
            objects.append(key)
        self._index(base, sid, as_of, paged, objects, len(items), manifest)
        return {"rows": len(items), "pages": len(objects), "page_size": PAGE_SIZE,
                "index": f"lists/{where}/index.json", **meta}, objects, written

    def _page(self, body: bytes, manifest: Manifest, shared: "SharedObjects",
              pages: dict[str, str]) -> tuple[str, bool]:
        """A page's object: the previous snapshot's or this publish's with the same items, or
        written, named by its items and its writer (as a part is, for pruning); and whether it
        was written."""
        name = hashlib.sha256(body).hexdigest()[:40]
        key = pages.get(name) or shared.by_name.get(name)
        if key is not None:
            if key not in manifest.objects:
                manifest.objects[key] = shared[key]
            return key, False
        key = pages[name] = f"{PAGES}{name}-{manifest.snapshot_id}.json"
        etag = self.store.put(key, body, JSON, IMMUTABLE)
        manifest.objects[key] = {"etag": etag, "bytes": len(body), "content_type": JSON}
        return key, True

    def _cursor(self, sid: str, paged: PagedList, offset: int, total: int) -> str | None:
        if offset >= total or offset < 0:
            return None
        return self.signer.encode(Cursor(sid, paged.name, offset, paged.scope))

    def _freeze(self, manifest: Manifest, documents: Mapping[str, object]) -> None:
        present = set(self.store.keys(FROZEN)) if documents else set()
        for name, doc in documents.items():
            key = f"{FROZEN}{name}.json"
            if key not in present:
                self.store.put(key, orjson.dumps(doc), JSON, IMMUTABLE)
                self.progress(f"{name}: frozen")
            manifest.frozen[name] = key

    def _put(self, manifest: Manifest, base: str, key: str, body: bytes, kind: str) -> None:
        etag = self.store.put(f"{base}/{key}", body, kind, IMMUTABLE)
        manifest.objects[key] = {"etag": etag, "bytes": len(body), "content_type": kind}

    def prune(self, now: datetime, ids: list[str] | None = None) -> list[str]:
        """Delete snapshots older than the retention window, always keeping the newest few
        (of `ids`, every snapshot present, listed here when not given)."""
        ids = snapshot_ids(self.store) if ids is None else ids
        live = latest_id(self.store)
        cutoff = (now - self.retention).strftime("%Y%m%dT%H%M%S%f")
        doomed = [s for s in ids[:-self.keep] if s[:21] < cutoff and s != live]
        if not doomed:
            return doomed
        # A part is written by one snapshot and named again by each next one while its rows
        # stay the same, so the snapshots naming it follow one another: a part a doomed snapshot
        # names is named by a kept one only if a kept one next to a doomed stretch names it.
        gone = set(doomed)
        edges = {ids[i + step] for i, sid in enumerate(ids) if sid in gone
                 for step in (-1, 1) if 0 <= i + step < len(ids) and ids[i + step] not in gone}
        kept = set().union(*(shared_objects(self.store, sid) or {} for sid in edges))
        unfinished = set()
        for sid in doomed:
            named = shared_objects(self.store, sid)
            if named is None:
                unfinished.add(sid)
            unnamed = set(named or {}) - kept
            self.store.delete(sorted(unnamed) + self.store.keys(f"snapshots/{sid}/"))
        if unfinished:
            # What a publish that never wrote its manifest left: the objects it wrote.
            self.store.delete([key for key in self.store.keys(OBJECTS)
                               if writer_of(key) in unfinished])
        return doomed


def _carried_fields(paged: PagedList) -> dict[str, Any]:
    """What a list's next publish needs to carry it without making it, besides its pages'
    objects: its name and scope (its cursors'), total, direction and envelope."""
    return {"list": paged.name, "scope": paged.scope, "total": paged.total,
            "backward": paged.backward, "envelope": paged.envelope}


def _objects_of(meta: Mapping[str, Any]) -> list[str]:
    """The shared objects a list's manifest entry names: its pages and its served parts."""
    return [*meta["family"]["objects"], *(part["object"] for part in meta.get("parts", []))]


@dataclass
class _Tally:
    """What the lists under one top-level name (`wallets/…`) published."""

    lists: int = 0
    rows: int = 0
    pages: int = 0
    written: int = 0
    seconds: float = 0.0

    def add(self, rows: int, pages: int, written: int, seconds: float) -> None:
        self.lists, self.rows, self.pages = self.lists + 1, self.rows + rows, self.pages + pages
        self.written, self.seconds = self.written + written, self.seconds + seconds

    def __str__(self) -> str:
        return (f"{self.lists} list(s), {self.rows} rows in {self.pages} page(s), "
                f"{self.written} written, {self.seconds:.1f}s")


def _blocks(piece: pl.DataFrame) -> dict[str, dict[str, int]]:
    """A part's highest block per chain (`blocks`, by chain id as text; none for a part of no
    chain events), so that a reader learns each chain's frontier from the manifest, not from
    every row."""
    if not {"chain_id", "block_number"} <= set(piece.columns) or piece.is_empty():
        return {"blocks": {}}
    found = piece.group_by("chain_id").agg(pl.col("block_number").max())
    return {"blocks": {str(c): int(b) for c, b in found.iter_rows()}}


def _key_bounds(piece: pl.DataFrame, key: Sequence[str]) -> dict[str, list[Any]]:
    """A part's first and last keys (`first`, `last`) in its leading key columns of a bounded
    type (`bounded_key`), so that a reader knows which parts a key may be in before it
    fetches any; none for a part without rows or without such columns."""
    named = bounded_key(piece, key)
    if not named or piece.is_empty():
        return {}
    ends = piece.select(named)
    return {"first": list(ends.row(0)), "last": list(ends.row(-1))}


def _pieces(table: "ServingTable | SpannedTable",
            wanted: set[Any] | None) -> Iterator[tuple[Any, pl.DataFrame]]:
    """A table's spans in `wanted` (all when None) and their rows, in span order (one
    unlabelled piece for a table without spans)."""
    if isinstance(table, SpannedTable):
        yield from table.pieces(wanted)
    else:
        yield None, table.frame


def _kept_spans(table: "ServingTable | SpannedTable", shared: Mapping[str, dict[str, Any]],
                previous: Mapping[str, Any]
                ) -> tuple[dict[Any, str], list[dict[str, Any]], list[dict[str, Any]]]:
    """A spanned table's input names, the previous snapshot's parts of the spans whose inputs
    are named the same (those need not be made again), and the spans it found without rows
    from the same inputs."""
    if isinstance(table, ServingTable) or table.inputs is None:
        return {}, [], []
    names = dict(table.inputs())
    meta = previous.get("tables", {}).get(table.name, {})
    kept = [dict(part) for part in meta.get("parts", []) if part.get("inputs") is not None
            and names.get(part["span"]) == part["inputs"] and part["object"] in shared]
    empty = [dict(span) for span in meta.get("empty", [])
             if names.get(span["span"]) == span["inputs"]]
    return names, kept, empty


def _parquet(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=True)
    return buffer.getvalue()


def page_items(items: list[str]) -> bytes:
    """`{"items": [...]}` from pre-rendered item JSON, without re-parsing the items: a published
    page's whole body."""
    return b'{"items":[' + ",".join(items).encode() + b"]}"


def page_body(items: list[str], next_cursor: str | None, prev_cursor: str | None,
              extra: dict[str, Any] | None = None, backward: bool = True) -> bytes:
    """A page with its cursors and `extra` fields, from pre-rendered item JSON; a forward-only
    page has no `prev_cursor`."""
    tail: dict[str, object] = {"next_cursor": next_cursor}
    if backward:
        tail["prev_cursor"] = prev_cursor
    tail.update(extra or {})
    return page_items(items)[:-1] + b"," + orjson.dumps(tail)[1:]
