"""Snapshots: immutable sets of pages, documents and serving tables, flipped live by LATEST."""

import hashlib
import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import polars as pl

from publish.cursor import Cursor, CursorSigner
from publish.store import IMMUTABLE, REVALIDATE, NotFound, ObjectStore

LATEST = "snapshots/LATEST"
# Documents published once and kept for good, outside any snapshot (closed seasons).
FROZEN = "frozen/"
PAGE_SIZE = 50
JSON = "application/json"
PARQUET = "application/vnd.apache.parquet"
ID_PATTERN = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{8}$")


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
class ServingTable:
    """A table the edge looks rows up in, published as Parquet sorted by `key`."""

    name: str
    frame: pl.DataFrame
    key: tuple[str, ...]


@dataclass
class Manifest:
    """What a snapshot holds and when it was computed."""

    snapshot_id: str
    as_of: str
    snapshot_at: str
    lists: dict[str, dict[str, Any]] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    frozen: dict[str, str] = field(default_factory=dict)
    # The version of every lake table the products were computed from: a reproducible read.
    lake_versions: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return orjson.dumps(self.__dict__, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)


def new_snapshot_id(at: datetime, as_of: datetime) -> str:
    """Sortable by publication time; the suffix tells apart snapshots published together."""
    digest = f"{at.isoformat()}|{as_of.isoformat()}".encode()
    return f"{at.strftime('%Y%m%dT%H%M%S%f')}Z-{hashlib.sha256(digest).hexdigest()[:8]}"


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Publisher:
    """Writes one snapshot, then LATEST, then prunes snapshots past the retention window."""

    def __init__(self, store: ObjectStore, signer: CursorSigner,
                 retention: timedelta = timedelta(hours=24), keep: int = 3,
                 progress: Callable[[str], None] = lambda _: None) -> None:
        self.store, self.signer = store, signer
        self.retention, self.keep, self.progress = retention, keep, progress

    def publish(self, as_of: datetime, lists: list[PagedList], documents: dict[str, object],
                now: datetime | None = None, tables: Sequence[ServingTable] = (),
                frozen: Mapping[str, object] | None = None,
                lake_versions: Mapping[str, int] | None = None) -> Manifest:
        """Publish everything under a new snapshot id and make it the latest. A `frozen`
        document is written once under `frozen/` and never rewritten; the manifest names it,
        and the lake versions the products were computed from."""
        now = now or datetime.now(UTC)
        sid = new_snapshot_id(now, as_of)
        manifest = Manifest(sid, _iso(as_of), _iso(now), lake_versions=dict(lake_versions or {}))
        base = f"snapshots/{sid}"
        for paged in lists:
            manifest.lists[paged.where] = self._list(base, sid, as_of, paged, manifest)
        for table in tables:
            key = f"tables/{table.name}.parquet"
            self._put(manifest, base, key, _parquet(table.frame.sort(table.key)), PARQUET)
            manifest.tables[table.name] = {"rows": table.frame.height, "table": key,
                                           "key": list(table.key)}
            self.progress(f"{table.name}: {table.frame.height} rows (serving table)")
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
        self.prune(now)
        return manifest

    def _list(self, base: str, sid: str, as_of: datetime, paged: PagedList,
              manifest: Manifest) -> dict[str, Any]:
        frame, where = paged.frame, paged.where
        meta: dict[str, Any] = {"key": list(paged.key)}
        if paged.served:
            meta["table"] = f"tables/{where}.parquet"
            self._put(manifest, base, meta["table"], _parquet(frame), PARQUET)
        items = frame["item"].to_list()
        total = max(paged.total or 0, len(items))
        pages = max(1, -(-len(items) // PAGE_SIZE))
        for n in range(pages):
            chunk = items[n * PAGE_SIZE:(n + 1) * PAGE_SIZE]
            body = page_body(chunk, self._cursor(sid, paged, (n + 1) * PAGE_SIZE, total),
                             self._cursor(sid, paged, (n - 1) * PAGE_SIZE, total)
                             if n else None,
                             links={"next": f"{n + 2}.json" if n + 1 < pages else None,
                                    "prev": f"{n}.json" if n else None},
                             extra={**paged.envelope, "snapshot_id": sid, "as_of": _iso(as_of)},
                             backward=paged.backward)
            self._put(manifest, base, f"lists/{where}/{n + 1}.json", body, JSON)
        self.progress(f"{where}: {len(items)} rows in {pages} page(s)")
        return {"rows": len(items), "pages": pages, "page_size": PAGE_SIZE,
                "first_page": f"lists/{where}/1.json", **meta}

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

    def prune(self, now: datetime) -> list[str]:
        """Delete snapshots older than the retention window, always keeping the newest few."""
        ids = snapshot_ids(self.store)
        live = latest_id(self.store)
        cutoff = (now - self.retention).strftime("%Y%m%dT%H%M%S%f")
        doomed = [s for s in ids[:-self.keep] if s[:21] < cutoff and s != live]
        for sid in doomed:
            self.store.delete(self.store.keys(f"snapshots/{sid}/"))
        return doomed


def _parquet(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=True)
    return buffer.getvalue()


def page_body(items: list[str], next_cursor: str | None, prev_cursor: str | None,
              links: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
              backward: bool = True) -> bytes:
    """A page envelope from pre-rendered item JSON, without re-parsing the items; a forward-only
    page has no `prev_cursor`."""
    head = b'{"items":[' + ",".join(items).encode() + b"]"
    tail: dict[str, object] = {"next_cursor": next_cursor}
    if backward:
        tail["prev_cursor"] = prev_cursor
    if links is not None:
        tail["links"] = links
    tail.update(extra or {})
    return head + b"," + orjson.dumps(tail)[1:]


def snapshot_ids(store: ObjectStore) -> list[str]:
    """Every snapshot id present, oldest first."""
    ids = {key.split("/")[1] for key in store.keys("snapshots/") if key.count("/") >= 2}
    return sorted(s for s in ids if ID_PATTERN.match(s))


def latest_id(store: ObjectStore) -> str | None:
    """The id LATEST points to, or None before the first publish."""
    try:
        sid: str = orjson.loads(store.get(LATEST).body)["snapshot_id"]
        return sid
    except NotFound:
        return None


@dataclass
class Snapshot:
    """A loaded snapshot: its manifest, documents (bytes) and serving tables (frames)."""

    manifest: Manifest
    documents: dict[str, bytes]
    tables: dict[str, pl.DataFrame]

    @property
    def snapshot_id(self) -> str:
        return self.manifest.snapshot_id


def load_snapshot(store: ObjectStore, snapshot_id: str) -> Snapshot:
    """Read a snapshot's manifest, documents and serving tables into memory."""
    raw = orjson.loads(store.get(f"snapshots/{snapshot_id}/manifest.json").body)
    manifest = Manifest(**raw)
    base = f"snapshots/{snapshot_id}"
    documents = {name: store.get(f"{base}/{key}").body for name, key in manifest.documents.items()}
    documents.update({name: store.get(key).body for name, key in manifest.frozen.items()})
    tables = {name: pl.read_parquet(io.BytesIO(store.get(f"{base}/{meta['table']}").body))
              for name, meta in {**manifest.lists, **manifest.tables}.items() if "table" in meta}
    return Snapshot(manifest, documents, tables)
