"""Reading snapshots: LATEST, a snapshot's manifest, its documents and serving tables (parts
read whole or memory-mapped), and the shared objects a manifest names."""

import io
import mmap
import os
import re
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.ipc

from core.caches import ByteCache
from core.store import NotFound, ObjectStore

LATEST = "snapshots/LATEST"
# Serving tables' parts, named by their rows' fingerprint and shared between snapshots.
OBJECTS = "objects/"
JSON = "application/json"
PARQUET = "application/vnd.apache.parquet"
ID_PATTERN = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{8}$")
# A part's local file: mapped whole, or in compressed blocks.
MAPPED = ".arrow"
BLOCKED = ".blocks"


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


def kept_locally(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Make a part's local file with `write` unless it is there (written whole, then renamed
    into place: processes that make the same one at once each write it and one is kept), and
    refresh its time, by which unused ones are removed (`forget_mapped`)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".writing", delete=False) as tmp:
            write(tmp)
            tmp.flush()
            # Written pages left in the page cache would be mapped sixteen at a time around
            # every page a lookup touches (the kernel's fault-around): out of the cache, a
            # lookup maps the pages it reads.
            os.fsync(tmp.fileno())
            os.posix_fadvise(tmp.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        os.replace(tmp.name, path)
    os.utime(path)


def map_part(store: ObjectStore, key: str, directory: Path) -> pl.DataFrame:
    """A stored part as a frame over a memory-mapped Arrow file in `directory`, written from
    the store's Parquet the first time (atomically: processes that map the same part at once
    each write it whole and keep one); its use refreshes the file's time, by which unused
    ones are removed (`forget_mapped`)."""
    path = directory / f"{Path(key).stem}{MAPPED}"
    kept_locally(path, lambda tmp: pl.read_parquet(io.BytesIO(store.get(key).body)).write_ipc(
        tmp, compression="uncompressed"))
    with path.open("rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ)
    # A lookup reads a few pages here and there: no read-ahead around them.
    mapped.madvise(mmap.MADV_RANDOM)
    table = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(mapped))).read_all()
    return cast(pl.DataFrame, pl.from_arrow(table, rechunk=False))


# A blocked part's rows are compressed this many at a time: a lookup decompresses the block or
# two its key falls in (half a millisecond each), and the file is about the size of the store's
# Parquet rather than several times it, as an uncompressed copy is.
BLOCK_ROWS = 1024
# One codec call per block: Arrow's own compression of an IPC file calls it once per buffer,
# twice the time for a block of twenty columns.
CODEC = pa.Codec("zstd")
# The key columns a block's bounds name: those before the first of another type or with nulls
# (bounds are compared as tuples).
BOUND_TYPES = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64,
               pl.String)
FOOTER = struct.Struct("<Q")
# The blocks decompressed last, kept for the next lookups (the busiest keys' blocks): bounded,
# whatever the parts' sizes.
DECOMPRESSED_BYTES = 32 << 20
_decompressed: ByteCache[pl.DataFrame] = ByteCache(DECOMPRESSED_BYTES)
_decompressing = threading.Lock()


def _packed(frame: pl.DataFrame) -> tuple[bytes, int]:
    """A frame as one compressed Arrow IPC stream, and its size uncompressed."""
    raw = io.BytesIO()
    frame.write_ipc_stream(raw, compression="uncompressed")
    return CODEC.compress(raw.getvalue(), asbytes=True), raw.tell()


class Blocks:
    """A stored part kept in a local file of compressed blocks of `BLOCK_ROWS` rows each (an
    Arrow IPC stream compressed whole), memory-mapped, with each block's first and last keys
    (the table's leading key columns): a lookup decompresses only the blocks its key may fall
    in, into memory it lets go after. The file is the blocks one after another, then an index
    (JSON: each block's place and size, the bounds, the empty frame's place), then the index's
    length."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        with path.open("rb") as file:
            self.mapped = mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ)
        self.mapped.madvise(mmap.MADV_RANDOM)
        end = len(self.mapped) - FOOTER.size
        (length,) = FOOTER.unpack_from(self.mapped, end)
        index = orjson.loads(self.mapped[end - length:end])
        self.key: tuple[str, ...] = tuple(index["key"])
        self.firsts = [tuple(first) for first in index["firsts"]]
        self.lasts = [tuple(last) for last in index["lasts"]]
        self.height: int = index["rows"]
        self.places: list[list[int]] = index["blocks"]
        self.empty = self._read(index["empty"])
        self._prefixes: dict[int, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {}

    def _read(self, place: list[int]) -> pl.DataFrame:
        start, length, size = place
        packed = pa.py_buffer(memoryview(self.mapped)[start:start + length])
        return pl.read_ipc_stream(io.BytesIO(CODEC.decompress(packed, size, asbytes=True)))

    @property
    def schema(self) -> pl.Schema:
        """The part's columns and types."""
        return self.empty.schema

    def block(self, index: int) -> pl.DataFrame:
        """The rows of one block, decompressed (or as decompressed for a lookup before)."""
        key = (self.path, index)
        with _decompressing:
            found = _decompressed.get(key)
        if found is None:
            found = self._read(self.places[index])
            with _decompressing:
                _decompressed.put(key, found, self.places[index][2])
        return found

    def blocks(self, first: int, last: int) -> pl.DataFrame:
        """The rows of blocks `first` to `last` (both included), decompressed."""
        found = [self.block(i) for i in range(first, last + 1)]
        return self.empty if not found else found[0] if len(found) == 1 else pl.concat(found)

    def whole(self) -> pl.DataFrame:
        """Every row, decompressed (not kept): for a reader of the whole table, not a lookup."""
        found = [self._read(place) for place in self.places]
        return self.empty if not found else pl.concat(found)

    def bounds(self, length: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Each block's first and last keys cut to their first `length` columns."""
        found = self._prefixes.get(length)
        if found is None:
            found = self._prefixes[length] = ([k[:length] for k in self.firsts],
                                              [k[:length] for k in self.lasts])
        return found


def block_part(store: ObjectStore, key: str, directory: Path, table_key: Sequence[str],
               rows: int = BLOCK_ROWS) -> Blocks:
    """A stored part of a table keyed by `table_key` (its rows sorted by it) as `Blocks` of
    `rows` rows in `directory`, written from the store's Parquet the first time (atomically, as
    `map_part` does); its use refreshes the file's time (`forget_mapped`)."""
    path = directory / f"{Path(key).stem}{BLOCKED}"

    def write(tmp: IO[bytes]) -> None:
        frame = pl.read_parquet(io.BytesIO(store.get(key).body))
        named = []
        for column in table_key:
            if frame.schema[column] not in BOUND_TYPES or frame[column].null_count():
                break
            named.append(column)
        starts = list(range(0, frame.height, rows))
        keys = frame.select(named)
        index: dict[str, Any] = {
            "key": named, "rows": frame.height, "firsts": keys[starts].rows(),
            "lasts": keys[[min(s + rows, frame.height) - 1 for s in starts]].rows(),
            "blocks": []}
        for block in [frame.clear(), *(frame.slice(s, rows) for s in starts)]:
            packed, size = _packed(block)
            index["blocks"].append([tmp.tell(), len(packed), size])
            tmp.write(packed)
        index["empty"] = index["blocks"].pop(0)
        footer = orjson.dumps(index)
        tmp.write(footer + FOOTER.pack(len(footer)))

    kept_locally(path, write)
    return Blocks(path)


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
    names = {f"{Path(key).stem}{suffix}" for key in keep for suffix in (MAPPED, BLOCKED)}
    for path in (*directory.glob(f"*{MAPPED}"), *directory.glob(f"*{BLOCKED}")):
        if path.name not in names and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            gone.append(path)
    return gone


@dataclass(frozen=True)
class Part:
    """One stored part of a serving table: its object's key and its rows (a frame, or `Blocks`
    for a table loaded blocked)."""

    object: str
    frame: "pl.DataFrame | Blocks"


@dataclass
class Snapshot:
    """A loaded snapshot: its manifest, documents (bytes) and serving tables, both whole
    (`tables`, the parts one after another; a blocked table is not there, see `whole`) and by
    part (`parts`, each sorted by the table's key)."""

    manifest: Manifest
    documents: dict[str, bytes]
    parts: dict[str, list[Part]]
    tables: dict[str, pl.DataFrame] = field(init=False)

    def __post_init__(self) -> None:
        # Without rechunking, the whole table holds the parts' memory, not a copy of it.
        self.tables = {name: frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)
                       for name, parts in self.parts.items()
                       if (frames := [p.frame for p in parts
                                      if isinstance(p.frame, pl.DataFrame)]) and
                       len(frames) == len(parts)}

    def schema(self, name: str) -> pl.Schema | None:
        """A serving table's columns and types (None when the snapshot lacks it)."""
        parts = self.parts.get(name)
        return None if not parts else parts[0].frame.schema

    def whole(self, name: str) -> pl.DataFrame | None:
        """A serving table's every row, blocked parts decompressed (None when the snapshot
        lacks it): for a reader of the whole table, once per snapshot."""
        if name in self.tables:
            return self.tables[name]
        parts = self.parts.get(name)
        if not parts:
            return None
        return pl.concat([p.frame if isinstance(p.frame, pl.DataFrame) else p.frame.whole()
                          for p in parts])

    @property
    def snapshot_id(self) -> str:
        return self.manifest.snapshot_id


def load_snapshot(store: ObjectStore, snapshot_id: str,
                  loaded: MutableMapping[str, "pl.DataFrame | Blocks"] | None = None,
                  mapped: Path | None = None, only: Iterable[str] | None = None,
                  blocked: Collection[str] = ()) -> Snapshot:
    """Read a snapshot's manifest, documents and serving tables (`only` these tables and no
    documents, when given); a part already in `loaded` (by its object's key, as an earlier
    snapshot that shares it left it there) is not read again. With `mapped` (a local
    directory), each part is kept there as an uncompressed Arrow file and memory-mapped: its
    pages stay in the OS page cache, shared by every process that maps it, rather than in this
    process's heap; the `blocked` tables' parts are kept there as `Blocks`, compressed."""
    raw = orjson.loads(store.get(f"snapshots/{snapshot_id}/manifest.json").body)
    manifest = Manifest(**raw)
    base = f"snapshots/{snapshot_id}"
    wanted = None if only is None else set(only)
    documents: dict[str, bytes] = {}
    if wanted is None:
        documents = {name: store.get(f"{base}/{key}").body
                     for name, key in manifest.documents.items()}
        documents.update({name: store.get(key).body for name, key in manifest.frozen.items()})
    cache: MutableMapping[str, pl.DataFrame | Blocks] = {} if loaded is None else loaded

    def part(name: str, meta: dict[str, Any], key: str) -> Part:
        frame = cache.get(key)
        if frame is None:
            if mapped is None:
                frame = pl.read_parquet(io.BytesIO(store.get(key).body))
            elif name in blocked:
                frame = block_part(store, key, mapped, meta.get("key", ()))
            else:
                frame = map_part(store, key, mapped)
            cache[key] = frame
        return Part(key, frame)

    parts = {name: [part(name, meta, p["object"]) for p in meta["parts"]]
             for name, meta in {**manifest.lists, **manifest.tables}.items()
             if "parts" in meta and (wanted is None or name in wanted)}
    return Snapshot(manifest, documents, parts)
