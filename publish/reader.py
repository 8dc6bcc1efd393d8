"""Reading snapshots: LATEST, a snapshot's manifest, its documents and serving tables (parts
read whole or memory-mapped), and the shared objects a manifest names."""

import io
import mmap
import os
import re
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.ipc

from core.store import NotFound, ObjectStore

LATEST = "snapshots/LATEST"
# Serving tables' parts, named by their rows' fingerprint and shared between snapshots.
OBJECTS = "objects/"
JSON = "application/json"
PARQUET = "application/vnd.apache.parquet"
ID_PATTERN = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{8}$")


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
    # The version of every lake table the products were computed from, and of every product
    # published: a reproducible read.
    lake_versions: dict[str, int] = field(default_factory=dict)
    warehouse_versions: dict[str, int] = field(default_factory=dict)
    # The layout of the lists: 2, pages shared by their items through a per-snapshot index
    # (a manifest without the field has the first, pages of their own under each snapshot).
    format: int = 1

    def to_json(self) -> bytes:
        return orjson.dumps(self.__dict__, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)


def stored_manifest(store: ObjectStore, sid: str) -> dict[str, Any] | None:
    """A snapshot's manifest, as stored (None when it has none readable: a publish that did not
    finish)."""
    try:
        found: dict[str, Any] = orjson.loads(store.get(f"snapshots/{sid}/manifest.json").body)
    except (NotFound, orjson.JSONDecodeError):
        return None
    return found


class SharedObjects(dict[str, dict[str, Any]]):
    """Shared objects by key, with their ETags and sizes, and each one's key by the fingerprint
    of its rows or items (`by_name`)."""

    def __init__(self, objects: Mapping[str, dict[str, Any]]) -> None:
        super().__init__(objects)
        self.by_name = {Path(key).stem.partition("-")[0]: key for key in objects}


def writer_of(key: str) -> str:
    """The snapshot id that wrote a shared object (empty for an object named by its rows
    alone)."""
    return Path(key).stem.partition("-")[2]


def objects_of(manifest: Mapping[str, Any]) -> SharedObjects:
    """The shared objects a manifest names."""
    return SharedObjects({key: meta for key, meta in manifest.get("objects", {}).items()
                   if key.startswith(OBJECTS)})


def shared_objects(store: ObjectStore, sid: str) -> dict[str, dict[str, Any]] | None:
    """The shared objects a snapshot's manifest names (None when it has no readable manifest)."""
    found = stored_manifest(store, sid)
    return None if found is None else objects_of(found)


def snapshot_ids(store: ObjectStore) -> list[str]:
    """Every snapshot id present, oldest first."""
    return [sid for sid in store.children("snapshots/") if ID_PATTERN.match(sid)]


def latest_id(store: ObjectStore) -> str | None:
    """The id LATEST points to, or None before the first publish; ValueError when LATEST is
    torn or names no snapshot."""
    try:
        return pointed_id(store.get(LATEST).body)
    except NotFound:
        return None


def pointed_id(body: bytes) -> str:
    """The snapshot id a LATEST pointer names; ValueError when it names none."""
    pointer = orjson.loads(body)
    sid = pointer.get("snapshot_id") if isinstance(pointer, dict) else None
    if not isinstance(sid, str) or not sid:
        raise ValueError(f"{LATEST} names no snapshot")
    return sid


def latest_manifest(store: ObjectStore) -> Manifest | None:
    """The manifest of the snapshot LATEST points to, or None before the first publish."""
    sid = latest_id(store)
    found = None if sid is None else stored_manifest(store, sid)
    return None if found is None else Manifest(**found)


def map_part(store: ObjectStore, key: str, directory: Path) -> pl.DataFrame:
    """A stored part as a frame over a memory-mapped Arrow file in `directory`, written from
    the store's Parquet the first time (atomically: processes that map the same part at once
    each write it whole and keep one); its use refreshes the file's time, by which unused
    ones are removed (`forget_mapped`)."""
    path = directory / f"{Path(key).stem}.arrow"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        frame = pl.read_parquet(io.BytesIO(store.get(key).body))
        with tempfile.NamedTemporaryFile(dir=directory, suffix=".writing", delete=False) as tmp:
            frame.write_ipc(tmp.name, compression="uncompressed")
            # Written pages left in the page cache would be mapped sixteen at a time around
            # every page a lookup touches (the kernel's fault-around): out of the cache, a
            # lookup maps the pages it reads.
            os.fsync(tmp.fileno())
            os.posix_fadvise(tmp.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        os.replace(tmp.name, path)
    os.utime(path)
    with path.open("rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ)
    # A lookup reads a few pages here and there: no read-ahead around them.
    mapped.madvise(mmap.MADV_RANDOM)
    table = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(mapped))).read_all()
    return cast(pl.DataFrame, pl.from_arrow(table, rechunk=False))


def table_parts(store: ObjectStore, manifest: Manifest, name: str,
                columns: Sequence[str] | None = None) -> Iterator[pl.DataFrame]:
    """A serving table's parts one at a time, in order, of `columns` only (all when None): a
    reader that cuts each part keeps no more than one part whole."""
    for meta in manifest.tables[name]["parts"]:
        yield pl.read_parquet(io.BytesIO(store.get(meta["object"]).body),
                              columns=None if columns is None else list(columns))


def forget_mapped(directory: Path, keep: set[str], older_than_s: float) -> list[Path]:
    """Remove the mapped parts not in `keep` (object keys) unused for `older_than_s`: a process
    still mapping one keeps its pages until it lets go."""
    gone = []
    cutoff = time.time() - older_than_s
    names = {f"{Path(key).stem}.arrow" for key in keep}
    for path in directory.glob("*.arrow"):
        if path.name not in names and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            gone.append(path)
    return gone


@dataclass(frozen=True)
class Part:
    """One stored part of a serving table: its object's key and its rows."""

    object: str
    frame: pl.DataFrame


@dataclass
class Snapshot:
    """A loaded snapshot: its manifest, documents (bytes) and serving tables, both whole
    (`tables`, the parts one after another) and by part (`parts`, each sorted by the table's
    key)."""

    manifest: Manifest
    documents: dict[str, bytes]
    parts: dict[str, list[Part]]
    tables: dict[str, pl.DataFrame] = field(init=False)

    def __post_init__(self) -> None:
        # Without rechunking, the whole table holds the parts' memory, not a copy of it.
        self.tables = {name: parts[0].frame if len(parts) == 1
                       else pl.concat([p.frame for p in parts], rechunk=False)
                       for name, parts in self.parts.items()}

    @property
    def snapshot_id(self) -> str:
        return self.manifest.snapshot_id


def load_snapshot(store: ObjectStore, snapshot_id: str,
                  loaded: MutableMapping[str, pl.DataFrame] | None = None,
                  mapped: Path | None = None, only: Iterable[str] | None = None) -> Snapshot:
    """Read a snapshot's manifest, documents and serving tables (`only` these tables and no
    documents, when given); a part already in `loaded` (by its object's key, as an earlier
    snapshot that shares it left it there) is not read again. With `mapped` (a local
    directory), each part is kept there as an uncompressed Arrow file and memory-mapped: its
    pages stay in the OS page cache, shared by every process that maps it, rather than in this
    process's heap."""
    raw = orjson.loads(store.get(f"snapshots/{snapshot_id}/manifest.json").body)
    manifest = Manifest(**raw)
    base = f"snapshots/{snapshot_id}"
    wanted = None if only is None else set(only)
    documents: dict[str, bytes] = {}
    if wanted is None:
        documents = {name: store.get(f"{base}/{key}").body
                     for name, key in manifest.documents.items()}
        documents.update({name: store.get(key).body for name, key in manifest.frozen.items()})
    cache: MutableMapping[str, pl.DataFrame] = {} if loaded is None else loaded

    def part(key: str) -> Part:
        frame = cache.get(key)
        if frame is None:
            frame = (pl.read_parquet(io.BytesIO(store.get(key).body)) if mapped is None
                     else map_part(store, key, mapped))
            cache[key] = frame
        return Part(key, frame)

    parts = {name: [part(p["object"]) for p in meta["parts"]]
             for name, meta in {**manifest.lists, **manifest.tables}.items()
             if "parts" in meta and (wanted is None or name in wanted)}
    return Snapshot(manifest, documents, parts)
