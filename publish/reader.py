"""Reading snapshots: LATEST, a snapshot's manifest, its documents and serving tables (parts
read whole or memory-mapped), and the shared objects a manifest names."""

import contextlib
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
from typing import IO, Any

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.ipc

from core.caches import ByteCache
from core.handover import mapped_frame
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
    # A lookup reads a few pages here and there: no read-ahead around them.
    return mapped_frame(path, mmap.MADV_RANDOM)


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

    def may_hold(self, keys: Sequence[str], key: tuple[Any, ...]) -> bool:
        """Whether a key (values of the columns `keys`) may have rows here, by the part's first
        and last keys: every key when they name none of its columns."""
        if not self.firsts:
            return False
        return _between(self.key, (self.firsts[0], self.lasts[-1]), keys, key)

    def close(self) -> None:
        """Let go of the local file's mapping (a frame read from it is a copy, kept)."""
        # A read that still holds a view of it: the mapping goes with the last reference.
        with contextlib.suppress(BufferError):
            self.mapped.close()

    def bounds(self, length: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Each block's first and last keys cut to their first `length` columns."""
        found = self._prefixes.get(length)
        if found is None:
            found = self._prefixes[length] = ([k[:length] for k in self.firsts],
                                              [k[:length] for k in self.lasts])
        return found


def bounded_key(frame: pl.DataFrame, key: Sequence[str]) -> list[str]:
    """The leading columns of `key` that bounds can name in `frame`: those before the first of
    another type than `BOUND_TYPES` or with nulls (bounds are compared as tuples)."""
    named = []
    for column in key:
        if frame.schema[column] not in BOUND_TYPES or frame[column].null_count():
            break
        named.append(column)
    return named


def block_part(store: ObjectStore, key: str, directory: Path, table_key: Sequence[str],
               rows: int = BLOCK_ROWS) -> Blocks:
    """A stored part of a table keyed by `table_key` (its rows sorted by it) as `Blocks` of
    `rows` rows in `directory`, written from the store's Parquet the first time (atomically, as
    `map_part` does); its use refreshes the file's time (`forget_mapped`)."""
    path = directory / f"{Path(key).stem}{BLOCKED}"

    def write(tmp: IO[bytes]) -> None:
        frame = pl.read_parquet(io.BytesIO(store.get(key).body))
        named = bounded_key(frame, table_key)
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


def leading_alike(named: Sequence[str], keys: Sequence[str]) -> int:
    """How many leading columns bounds of the columns `named` and a lookup by `keys` name
    alike: how far the bounds narrow the lookup."""
    length = 0
    while length < min(len(named), len(keys)) and named[length] == keys[length]:
        length += 1
    return length


def _between(named: Sequence[str], ends: tuple[tuple[Any, ...], tuple[Any, ...]],
             keys: Sequence[str], key: tuple[Any, ...]) -> bool:
    """Whether `key` (values of the columns `keys`) falls between a part's first and last keys
    (`ends`, of the columns `named`), in the leading columns the two name alike."""
    length = leading_alike(named, keys)
    try:
        return ends[0][:length] <= tuple(key[:length]) <= ends[1][:length]
    except TypeError:
        # A key of another type than the column's: the lookup's own check answers it.
        return True


# The most this process keeps of parts fetched as blocks (their local files' bytes) unless the
# edge sets it (`hold_blocks`): past it the least recently read are let go, their files
# removed, and fetched again when read.
HELD_BLOCKS_BYTES = 1 << 30


class StoredBlocks:
    """A stored part of a table read by key, as `Blocks` fetched from the store when a lookup
    first reads it, not when its snapshot is loaded, and let go when the parts this process
    holds pass their byte bound (`hold_blocks`), to be fetched again when read: the local disk
    is the bound, not every part of every snapshot kept. What a lookup asks before it reads
    (`may_hold`, `height`) is answered from the manifest."""

    def __init__(self, store: ObjectStore, key: str, directory: Path, table_key: Sequence[str],
                 meta: Mapping[str, Any]) -> None:
        self.store, self.object, self.directory = store, key, directory
        self.table_key = tuple(table_key)
        self.height: int = meta.get("rows", 0)
        first, last = meta.get("first"), meta.get("last")
        self._ends = None if first is None or last is None else (tuple(first), tuple(last))
        self._lock = threading.Lock()
        self._open: Blocks | None = None
        self._users = 0
        self._letting_go = False

    def may_hold(self, keys: Sequence[str], key: tuple[Any, ...]) -> bool:
        """Whether a key (values of the columns `keys`) may have rows here, by the part's first
        and last keys in the manifest, without fetching it (every key of a part the manifest
        names no keys of, but for one without rows)."""
        if not self.height:
            return False
        return self._ends is None or _between(self.table_key, self._ends, keys, key)

    @contextlib.contextmanager
    def _using(self) -> Iterator[Blocks]:
        """The part's blocks, fetched if they are not held, kept open while in use."""
        with self._lock:
            fresh = self._open is None
            if self._open is None:
                self._open = self._fetched()
            opened = self._open
            self._users += 1
        if fresh:
            if not _held.hold(self, os.path.getsize(opened.path)):
                self.let_go()
        else:
            _held.touch(self)
        try:
            yield opened
        finally:
            with self._lock:
                self._users -= 1
                if self._letting_go and not self._users:
                    self._close()

    def _fetched(self) -> Blocks:
        try:
            return block_part(self.store, self.object, self.directory, self.table_key)
        except FileNotFoundError:
            # Another worker let the file go between finding and opening it: made again.
            return block_part(self.store, self.object, self.directory, self.table_key)

    def let_go(self) -> None:
        """Close the blocks and remove their file once no read uses them."""
        with self._lock:
            self._letting_go = True
            if not self._users:
                self._close()

    def _close(self) -> None:
        opened, self._open, self._letting_go = self._open, None, False
        if opened is not None:
            opened.close()
            Path(opened.path).unlink(missing_ok=True)

    @property
    def key(self) -> tuple[str, ...]:
        """The leading key columns the blocks' bounds name."""
        with self._using() as blocks:
            return blocks.key

    @property
    def empty(self) -> pl.DataFrame:
        """No rows, with the part's columns."""
        with self._using() as blocks:
            return blocks.empty

    @property
    def schema(self) -> pl.Schema:
        """The part's columns and types."""
        return self.empty.schema

    def bounds(self, length: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Each block's first and last keys cut to their first `length` columns."""
        with self._using() as blocks:
            return blocks.bounds(length)

    def blocks(self, first: int, last: int) -> pl.DataFrame:
        """The rows of blocks `first` to `last` (both included), decompressed."""
        with self._using() as blocks:
            return blocks.blocks(first, last)

    def whole(self) -> pl.DataFrame:
        """Every row, decompressed (not kept)."""
        with self._using() as blocks:
            return blocks.whole()


class _HeldBlocks:
    """The parts this process holds fetched as blocks, least recently read first, within a byte
    bound: one past it lets the least recently read go."""

    def __init__(self, max_bytes: int) -> None:
        self._lock = threading.Lock()
        self._parts: ByteCache[StoredBlocks] = ByteCache(max_bytes, StoredBlocks.let_go)

    def hold(self, part: StoredBlocks, size: int) -> bool:
        """Hold a part just fetched (False: it alone passes the bound, so it is not held)."""
        with self._lock:
            self._parts.put(part, part, size)
            return part in self._parts

    def touch(self, part: StoredBlocks) -> None:
        """A held part was read: it is now the most recently read."""
        with self._lock:
            self._parts.get(part)

    def held_bytes(self) -> int:
        """What the held parts' files take."""
        return self._parts.bytes


_held = _HeldBlocks(HELD_BLOCKS_BYTES)


def hold_blocks(max_bytes: int) -> None:
    """Bound what this process holds of parts fetched as blocks (the parts held until now let
    go)."""
    global _held
    with _held._lock:
        for part in list(_held._parts.values()):
            part.let_go()
    _held = _HeldBlocks(max_bytes)


def held_blocks_bytes() -> int:
    """What this process's held parts' files take on disk."""
    return _held.held_bytes()


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
    frame: "pl.DataFrame | StoredBlocks"


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
        """A serving table's columns and types (None when the snapshot lacks it), from its
        smallest part: a part fetched when first read is fetched for it."""
        parts = self.parts.get(name)
        return None if not parts else min(parts, key=lambda p: p.frame.height).frame.schema

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
                  loaded: MutableMapping[str, "pl.DataFrame | StoredBlocks"] | None = None,
                  mapped: Path | None = None, only: Iterable[str] | None = None,
                  blocked: Collection[str] = ()) -> Snapshot:
    """Read a snapshot's manifest, documents and serving tables (`only` these tables and no
    documents, when given); a part already in `loaded` (by its object's key, as an earlier
    snapshot that shares it left it there) is not read again. With `mapped` (a local
    directory), each part is kept there as an uncompressed Arrow file and memory-mapped: its
    pages stay in the OS page cache, shared by every process that maps it, rather than in this
    process's heap; the `blocked` tables' parts are kept there as `Blocks`, compressed,
    each fetched when first read (`StoredBlocks`)."""
    raw = orjson.loads(store.get(f"snapshots/{snapshot_id}/manifest.json").body)
    manifest = Manifest(**raw)
    base = f"snapshots/{snapshot_id}"
    wanted = None if only is None else set(only)
    documents: dict[str, bytes] = {}
    if wanted is None:
        documents = {name: store.get(f"{base}/{key}").body
                     for name, key in manifest.documents.items()}
        documents.update({name: store.get(key).body for name, key in manifest.frozen.items()})
    cache: MutableMapping[str, pl.DataFrame | StoredBlocks] = {} if loaded is None else loaded

    def part(name: str, meta: dict[str, Any], stored: dict[str, Any]) -> Part:
        key = stored["object"]
        frame = cache.get(key)
        if frame is None:
            if mapped is None:
                frame = pl.read_parquet(io.BytesIO(store.get(key).body))
            elif name in blocked:
                frame = StoredBlocks(store, key, mapped, meta.get("key", ()), stored)
            else:
                frame = map_part(store, key, mapped)
            cache[key] = frame
        return Part(key, frame)

    parts = {name: [part(name, meta, p) for p in meta["parts"]]
             for name, meta in {**manifest.lists, **manifest.tables}.items()
             if "parts" in meta and (wanted is None or name in wanted)}
    return Snapshot(manifest, documents, parts)
