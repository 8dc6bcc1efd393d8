"""The warehouse's tables, with nothing of Dagster: the raw lake as a run pinned it, and the
products, each a Delta Lake table under one root, a directory or an S3 prefix (a version per
write, as-of reads by version), its files written by polars and committed with delta-rs. The
batch's resource (`assets.warehouse.Warehouse`) and the live tail both read and write through
it."""

import functools
import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions
from polars.io.plugins import register_io_source

from core.caches import LruCache
from core.delta import DeltaRoot, add_actions
from core.home import home
from core.store import NotFound, ObjectStore, open_store
from sources.lake import TABLES, LakeReader

# The week's largest products, which others read back in full (every swap as a leg, every
# wallet's ledger, positions and rounds): stored uncompressed, they are read back faster and
# written with less CPU, for a fifth to a quarter more disk. The rest, which lz4 shrinks by half
# or more, use it.
UNCOMPRESSED = frozenset({"swap_legs", "wallet_ledger", "wallet_positions", "wallet_rounds"})


# Products made a lake day at a time (Dagster's `days` partitions), a partition per day, by the
# lake table whose days they follow; read back as one table, the days in order.
BY_DAY = {"swap_legs": "swaps", "pair_days": "swaps", "holder_changes": "swaps",
          "reserve_days": "swaps",
          "wallet_ledger": "swaps", "wallet_book_states": "swaps", "token_marks": "swaps"}
# The lake tables read a day partition at a time (`Warehouse.scan_day`): a change to any of them
# changes the day of swaps that takes its date.
DAY_TABLES = ("swaps", "transfers", "liquidity_events", "reserves")
# The partition columns of a product made a day at a time (in the Delta log, not in the files):
# its day, and the first hour of the day a file holds (two digits): a day is made in files of
# whole hours, and a refresh replaces the hours from the one its new rows begin in.
DAY, HOUR = "date", "hour"
# A product's versions stay readable this long after a newer one replaced them: every refresh
# rewrites most products, so a longer window costs a snapshot's worth of disk per refresh.
RETENTION = timedelta(minutes=10)
# Where the files each product's schema check passed are recorded.
CHECKED = "_checked"
# Records `Warehouse.remember` keeps.
KEPT = "_kept"
# A product commit's record of its making (`Tables.write`), and how many commits back it is
# looked for.
MADE = "chaintape_made"
MADE_LOOKBACK = 16
# The warehouse's layout, kept as a record: 2, the legs and the ledger name their swaps by
# event (chain, block, log) where the first named them by place among the lake's swaps; 3, a
# day's products in files of hours. A warehouse of another layout is refused, not read, and
# made again from the lake.
FORMAT = 3
LAYOUTS = {1: "swaps named by place among the lake's swaps", 2: "a day's products in one file",
           3: "a day's products in files of hours"}
FORMAT_RECORD = "format"
# The versions a vacuum looks back over for those inside the window.
HISTORY = 256
# The log's commits past a checkpoint are dropped after this, so opening a table stays cheap.
LOG_RETENTION = {"delta.logRetentionDuration": "interval 1 day"}

# Each warehouse's `as_of` row (the watermark and the lake versions it pinned), by the
# product's log's state: read once per commit of it, not at every step's every read.
_AS_OF: dict[str, tuple[int, dict[str, Any]]] = {}
# A product's data files at a given version never change: each version's list is read from
# its log once (a publish asks for the same versions dozens of times), under a lock, since the
# steps' threads ask too.
_VERSION_FILES: LruCache[dict[str | None, list[str]]] = LruCache(512)
_VERSION_FILES_LOCK = threading.Lock()


def parquet_options(name: str) -> dict:
    """How a product's Parquet file is written: its compression."""
    return {"compression": "uncompressed" if name in UNCOMPRESSED else "lz4"}


def default_root() -> str:
    """$CHAINTAPE_WAREHOUSE (a directory or s3://bucket/prefix), else $CHAINTAPE_HOME/warehouse,
    else ./var/warehouse."""
    return os.environ.get("CHAINTAPE_WAREHOUSE") or str(home() / "warehouse")


class WarehouseFormatError(RuntimeError):
    """The warehouse was written in another layout than this code's (`FORMAT`)."""


class Tables:
    """The raw lake plus the materialised products, addressed by table name."""

    lake_root: str
    root: str

    def __init__(self, lake_root: str, root: str) -> None:
        self.lake_root = lake_root
        self.root = root

    def reading(self, name: str) -> None:
        """Called before a table is read: the batch's resource refuses a read its step does not
        depend on."""

    @property
    def delta(self) -> DeltaRoot:
        """Where the products live, and the S3 settings they are read with."""
        return _delta_root(self.root, os.environ.get("AWS_ENDPOINT_URL"))

    @property
    def remote(self) -> bool:
        """Whether the products live under an S3 prefix rather than in a directory."""
        return self.delta.remote

    def lake(self) -> LakeReader:
        """The raw lake as this run reads it: at the versions the `as_of` product pinned (the
        lake's last complete batch when the run began), so every product of a run sees the same
        lake however much a live writer adds meanwhile."""
        try:
            row = self._as_of()
        except FileNotFoundError:
            return self.pin()
        return LakeReader(self.lake_root, json.loads(row["lake_versions"]))

    def _as_of(self) -> dict[str, Any]:
        """The `as_of` product's one row, read again only after a commit to it."""
        stamp = self._stamp("as_of")
        where = self.uri("as_of")
        if _AS_OF.get(where, (None,))[0] != stamp:
            _AS_OF[where] = (stamp, self.read(self.files("as_of")[None]).collect().row(
                0, named=True))
        return dict(_AS_OF[where][1])

    def _stamp(self, name: str) -> int:
        """What changes with every commit to a product: its log directory's time (a commit adds
        a file to it), or on S3 its version."""
        if self.remote:
            if not self.exists(name):
                raise FileNotFoundError(self.uri(name))
            return self.version(name)
        return (self.path(name) / "_delta_log").stat().st_mtime_ns

    def pin(self) -> LakeReader:
        """The raw lake at its last complete batch, for the asset that pins a run's lake."""
        return LakeReader(self.lake_root).pinned()

    def path(self, name: str) -> Path:
        """The directory of a product's Delta table (in a warehouse on a filesystem)."""
        return Path(self.root) / name

    def uri(self, name: str) -> str:
        """Where a product's Delta log and files live."""
        return self.delta.uri(name)

    def exists(self, name: str) -> bool:
        """Whether a product has been written."""
        return self.delta.exists(name)

    def read(self, files: list[str]) -> pl.LazyFrame:
        """Some of a product's data files (as `files` names them), lazily, in order."""
        return pl.scan_parquet(files, storage_options=self.delta.polars_options())

    def version(self, name: str) -> int:
        """A product's current version."""
        found = self.delta.latest_version(name)
        return self._table(name).version() if found is None else found

    def scan(self, name: str, version: int | None = None) -> pl.LazyFrame:
        """A raw table or a product (at `version`, else its latest), lazily. Inside an asset's
        step, only a table the asset depends on (or its own product): an asset's deps are what
        it reads, so a read its deps do not name fails its step rather than run out of order."""
        self.reading(name)
        if name in TABLES:
            return self.lake().scan(name)
        if name in BY_DAY:
            return self._days(name, version)
        return self.read(self.files(name, version)[None])

    def scan_day(self, name: str, day: str) -> pl.LazyFrame:
        """A raw table's rows of a day partition (a day of swaps, YYYY-MM-DD): those of the
        lake's dates after the day of swaps before it, up to it, so that the moves of a date no
        swap was made on count in the next day of swaps; the first day's, every row up to it
        (tokens are minted and pools funded before their first swap)."""
        if name not in DAY_TABLES:
            raise ValueError(f"{name} is not read a day at a time (DAY_TABLES)")
        self.reading(name)
        return self.lake().scan(name, self.day_dates(name, day))

    def day_dates(self, name: str, day: str) -> tuple[str, ...]:
        """The dates of a raw table a day partition takes (`scan_day`)."""
        lake = self.lake()
        after = max((d for d in lake.days("swaps") if d < day), default="")
        return tuple(d for d in lake.days(name) if after < d <= day)

    def scan_since(self, name: str, start: datetime) -> pl.LazyFrame:
        """A raw table partitioned by date: the rows of `start`'s date and later, the earlier
        dates' files left unread (the rows of that date before `start` are the reader's to
        filter)."""
        self.reading(name)
        lake = self.lake()
        first = f"{start.astimezone(UTC):%Y-%m-%d}"
        return lake.scan(name, tuple(day for day in lake.days(name) if day >= first))

    def hours(self, name: str, day: str) -> list[int]:
        """The hours a product's files of `day` begin at, in order (none when it has none)."""
        found = self.files(name).get(day, []) if self.exists(name) else []
        return sorted(int(path.split(f"/{HOUR}=")[1][:2]) for path in found)

    def made_record(self, name: str) -> dict[str, Any] | None:
        """What the product's last write kept of its making (`write`'s `made`), or None."""
        if not self.exists(name):
            return None
        # The last product write's: a vacuum after it commits too (at most a few, between two
        # refreshes; none found reads as no record: the day is made whole).
        for commit in self._read(name, self.delta.latest_version(name)).history(MADE_LOOKBACK):
            if commit.get("chaintape") == "product":
                return json.loads(commit[MADE]) if MADE in commit else None
        return None

    def product_days(self, name: str, days: list[str]) -> pl.LazyFrame:
        """The rows of some days of a product made a day at a time, the days in order."""
        files = self.files(name)
        return self.read([path for day in sorted(days) for path in files[day]])

    def files(self, name: str, version: int | None = None) -> dict[str | None, list[str]]:
        """A product's data files at `version` (else its latest), by day for a product made a
        day at a time (None otherwise)."""
        if version is None:
            version = self.delta.latest_version(name)
        if version is None:
            return self._files(name, None)
        pinned = (self.uri(name), version, self._commit_stamp(name, version))
        with _VERSION_FILES_LOCK:
            found = _VERSION_FILES.get(pinned)
        if found is None:
            found = self._files(name, version)
            with _VERSION_FILES_LOCK:
                _VERSION_FILES.put(pinned, found)
        return found

    def _commit_stamp(self, name: str, version: int) -> int:
        """When a version's commit was written, where the warehouse is a directory: a table
        removed and made again has new commits under the same version numbers."""
        return self.delta.committed_at(name, version) or 0

    def _files(self, name: str, version: int | None) -> dict[str | None, list[str]]:
        actions = add_actions(self._read(name, version))
        column = f"partition.{DAY}"
        by_day = pl.col(column) if column in actions.columns else pl.lit(None, pl.String)
        grouped = actions.group_by(by_day.alias("day")).agg(pl.col("path").sort())
        root = self.uri(name)
        return {day: [f"{root}/{path}" for path in paths] for day, paths in grouped.iter_rows()}

    def _read(self, name: str, version: int | None) -> DeltaTable:
        """A product to read: at `version` as the process holds it (`DeltaRoot.read`), else
        opened at its newest."""
        return self._table(name) if version is None else self._found(
            name, self.delta.read(name, version))

    def _table(self, name: str) -> DeltaTable:
        """A product opened at its newest, to write through."""
        # Opened once: asking whether it exists first would read its log twice.
        return self._found(name, self.delta.open(name))

    def _found(self, name: str, table: DeltaTable | None) -> DeltaTable:
        if table is None:
            raise FileNotFoundError(f"product {name!r} is not materialised yet "
                                    f"({self.uri(name)})")
        return table

    def _days(self, name: str, version: int | None) -> pl.LazyFrame:
        """A product made a day at a time: the files of the days its lake table holds, in
        order (`day_files`)."""
        return self.read([path for paths in self.day_files(name, version).values()
                          for path in paths])

    def day_files(self, name: str, version: int | None = None) -> dict[str, list[str]]:
        """A product made a day at a time: its files at `version` (else its latest) of each
        day its lake table holds, in order; a day not made yet fails the read rather than
        leave its rows out."""
        files = self.files(name, version) if self.exists(name) else {}
        days = self.lake().days_made(BY_DAY[name])
        missing = [day for day in days if day not in files]
        if missing:
            raise FileNotFoundError(
                f"product {name!r} is not materialised for {', '.join(missing)}: materialise "
                "those partitions (a backfill in the UI, or `chaintape materialize`)")
        if not days:
            raise FileNotFoundError(f"product {name!r} has no days: the lake's "
                                    f"{BY_DAY[name]} table is empty")
        return {day: files[day] for day in days}

    def unmade_days(self) -> list[str]:
        """The days one product made a day at a time holds and another lacks: a product new to
        this warehouse, or one a failed run left behind, whose days a refresh makes again."""
        made = {name: {day for day in self.files(name) if day is not None}
                if self.exists(name) else set() for name in BY_DAY}
        anywhere = set().union(*made.values())
        return sorted({day for days in made.values() for day in anywhere - days})

    def clock(self) -> dict:
        """The `as_of` product's one row: the watermark and the instants derived from it."""
        self.reading("as_of")
        return self._as_of()

    def frames(self, names: tuple[str, ...]) -> dict[str, pl.LazyFrame]:
        """Several tables by name, for a SQL model's lineage."""
        return {name: self.scan(name) for name in names}

    def write(self, name: str, frame: pl.DataFrame | pl.LazyFrame, day: str | None = None,
              hour: int = 0, made: Mapping[str, Any] | None = None) -> int:
        """Replace a product (or of its `day`, the files from `hour` on: the whole day from 0)
        in one Delta commit and return the new version; `made` is kept with the commit (what
        the making read, `made_record`). A lazy frame streams into its file, computed and
        written batch by batch. A failed write commits nothing: readers keep the previous
        version."""
        self.check_format()
        if not 0 <= hour < 24:
            raise ValueError(f"hour {hour} is not an hour of a day (0-23)")
        where = f"{DAY}={day}/{HOUR}={hour:02d}/" if day is not None else ""
        part = where + f"part-{uuid.uuid4().hex}.parquet"
        # A directory of its own: a sink that fails can still open its file after reporting the
        # failure, which then cannot land once the directory is gone. Beside the table on a
        # filesystem, so that the finished file is renamed into place.
        scratch = None
        if not self.remote:
            scratch = self.path(name)
            scratch.mkdir(parents=True, exist_ok=True)
        writing = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=scratch))
        tmp = writing / "product"
        try:
            if isinstance(frame, pl.LazyFrame):
                storable(frame).sink_parquet(tmp, **parquet_options(name))
            else:
                storable(frame).write_parquet(tmp, **parquet_options(name))
            written = _Written.of(tmp, part, day, hour)
            self._place(name, tmp, part)
        finally:
            _remove(writing)
        try:
            table = self._commit(name, written, made)
        except BaseException:
            self._unplace(name, part)
            raise
        if table is None:
            return 0
        self.vacuum(name, table=table)
        return table.version()

    def _objects(self) -> ObjectStore:
        return _object_store(self.root, os.environ.get("AWS_ENDPOINT_URL"))

    def _place(self, name: str, tmp: Path, part: str) -> None:
        """Move a written file to its place in a product's table (not yet committed)."""
        self._objects().put_file(f"{name}/{part}", tmp)

    def _unplace(self, name: str, part: str) -> None:
        self._objects().delete([f"{name}/{part}"])

    def _commit(self, name: str, written: "_Written", made: Mapping[str, Any] | None
                ) -> DeltaTable | None:
        """Commit one placed file as the whole of a product's table (or of its day's
        partition from its hour on), creating the table with the file's schema the first
        time; returns the table at its new version (None when the commit created it)."""
        day = written.day
        values = {DAY: day, HOUR: f"{written.hour:02d}"} if day is not None else {}
        add = AddAction(written.part, written.size, values, written.modified_ms, True,
                        json.dumps({"numRecords": written.rows}))
        partitions = [DAY, HOUR] if day is not None else None
        meta = CommitProperties(custom_metadata={
            "chaintape": "product", **({MADE: json.dumps(made)} if made is not None else {})})
        schema = delta_schema(written.schema, day is not None)
        if not self.exists(name):
            create_table_with_add_actions(self.uri(name), schema, [add], mode="append",
                                          partition_by=partitions, configuration=LOG_RETENTION,
                                          commit_properties=meta,
                                          storage_options=self.delta.options())
            return None
        delta = self._table(name)
        delta.create_write_transaction(
            [add], mode="overwrite", schema=schema, partition_by=partitions,
            partition_filters=None if day is None else [
                (DAY, "=", day), (HOUR, "in", [f"{h:02d}" for h in range(written.hour, 24)])],
            commit_properties=meta)
        delta.update_incremental()
        return delta

    def vacuum(self, name: str, retention: timedelta = RETENTION,
               table: DeltaTable | None = None) -> list[str]:
        """Delete the files of a product's versions replaced more than `retention` ago (the
        versions committed since, and the latest, stay readable); returns the files deleted.
        `table`: the product as its writer just left it, not opened again."""
        table = table if table is not None else self._table(name)
        cutoff = (datetime.now(UTC) - retention).timestamp() * 1000
        # Bounded: a product is rewritten a few times a minute at most.
        recent = [entry["version"] for entry in table.history(limit=HISTORY)
                  if entry["timestamp"] >= cutoff]
        return table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False,
                            keep_versions=[table.version(), *recent])

    def passed(self, name: str, files: list[str], rules: str) -> None:
        """Record that these data files of a product passed its schema check under `rules`
        (a file's name is never reused, so it names the rows checked); files no longer live
        are forgotten."""
        table = self.uri(name) + "/"
        live = {path for paths in self.files(name).values() for path in paths}
        record = {"rules": rules, "files": [f.removeprefix(table) for f in sorted(
            (set(self._passed(name, rules)) | set(files)) & live)]}
        self._objects().put(f"{CHECKED}/{name}.json", json.dumps(record).encode(),
                            "application/json", "no-store")

    def unchecked(self, name: str, rules: str, version: int | None = None) -> list[str]:
        """A product's data files at `version` (else its latest) that no schema check under
        `rules` passed, in read order."""
        known = set(self._passed(name, rules))
        files = self.files(name, version)
        return [path for day in sorted(files, key=lambda d: d or "") for path in files[day]
                if path not in known]

    def _passed(self, name: str, rules: str) -> list[str]:
        try:
            body = self._objects().get(f"{CHECKED}/{name}.json").body
        except NotFound:
            return []
        record = json.loads(body)
        if record["rules"] != rules:
            return []
        return [f"{self.uri(name)}/{path}" for path in record["files"]]

    def recall(self, name: str) -> dict[str, Any]:
        """What `remember` last kept under `name` (nothing when it never did)."""
        try:
            return json.loads(self._objects().get(f"{KEPT}/{name}.json").body)
        except NotFound:
            return {}

    def remember(self, name: str, record: Mapping[str, Any]) -> None:
        """Keep a small record under `name` (what a product's making learnt of its inputs, by
        their names), in place of the one before."""
        self._objects().put(f"{KEPT}/{name}.json", json.dumps(record).encode(),
                            "application/json", "no-store")

    def stale_format(self) -> str | None:
        """Why this warehouse cannot be read by this code (None when it can): its products
        were written in another layout (`FORMAT`; a warehouse without the record, the first)."""
        found = self.recall(FORMAT_RECORD).get("format")
        if found is None and not self.products():
            return None
        if found == FORMAT:
            return None
        return (f"the warehouse at {self.root} was written in layout {found or 1} "
                f"({LAYOUTS.get(found or 1, 'unknown')}), and this code reads layout {FORMAT} "
                f"({LAYOUTS[FORMAT]}): remove it and materialise again from the lake "
                "(`chaintape up` does both)")

    def check_format(self) -> None:
        """Refuse to write into a warehouse of another layout; mark a new one with this one's.
        A marked warehouse costs one small read: every write passes here."""
        if self.recall(FORMAT_RECORD).get("format") == FORMAT:
            return
        stale = self.stale_format()
        if stale is not None:
            raise WarehouseFormatError(stale)
        self.remember(FORMAT_RECORD, {"format": FORMAT})

    def products(self) -> list[str]:
        """The products written so far."""
        return sorted(name for name in self._objects().children("") if self.exists(name))

    def maintain(self, name: str) -> list[str]:
        """Vacuum a product past the retention window, then delete the files no version names
        (a write killed between its file and its commit) once they are an hour old."""
        deleted = self.vacuum(name)
        return deleted + self._table(name).vacuum(
            retention_hours=1, full=True, dry_run=False, enforce_retention_duration=False)


@functools.cache
def _delta_root(root: str, endpoint: str | None) -> DeltaRoot:
    """A warehouse root's tables: one per root for the process, and another once `endpoint`
    (which the S3 settings read from the environment) names another server."""
    return DeltaRoot.at(root)


@functools.cache
def _object_store(root: str, endpoint: str | None) -> ObjectStore:
    """The store of a warehouse's root: one per root for the process (boto3's clients are safe
    to share between threads), and another once `endpoint` (which `open_store` reads from the
    environment) names another server."""
    return open_store(root)


@dataclass(frozen=True)
class _Written:
    """A product's file as written, before it is placed: its place in the table (`part`), its
    day, schema, rows, size and time."""

    part: str
    day: str | None
    hour: int
    schema: pa.Schema
    rows: int
    size: int
    modified_ms: int

    @staticmethod
    def of(path: Path, part: str, day: str | None, hour: int) -> "_Written":
        stat = path.stat()
        return _Written(part, day, hour, pq.read_schema(path), pq.read_metadata(path).num_rows,
                        stat.st_size, int(stat.st_mtime * 1000))


Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def storable(frame: Frame) -> Frame:
    """A product as stored: a UInt64 column (a fingerprint, compared and grouped, never summed)
    as Int64 of the same bits, which Delta can declare."""
    schema = frame.collect_schema()
    wide = [name for name, kind in schema.items() if kind == pl.UInt64]
    return frame.with_columns(pl.col(wide).reinterpret(signed=True)) if wide else frame


def fingerprints(frame: Frame, *columns: str) -> Frame:
    """A stored product's fingerprint columns as they were made (`storable`'s inverse)."""
    return frame.with_columns(pl.col(*columns).reinterpret(signed=False))


# Delta has no unsigned integers: a product's unsigned column is declared as the signed type
# that holds every value, which any Delta reader casts the file's values to without loss.
_WIDER = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64()}


def delta_type(kind: pa.DataType) -> pa.DataType:
    """The Delta column type of a product file's column type."""
    if pa.types.is_dictionary(kind):
        return delta_type(kind.value_type)
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(delta_type(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, delta_type(f.type)) for f in kind])
    if kind == pa.uint64():
        raise TypeError("a product cannot hold UInt64 nested in a list or struct (Delta has no "
                        "type for all its values)")
    return _WIDER.get(kind, kind)


def delta_schema(schema: pa.Schema, by_day: bool) -> Schema:
    """The Delta schema of a product file's schema (with its day and hour, for one made by
    day)."""
    fields = [pa.field(f.name, delta_type(f.type)) for f in schema]
    return Schema.from_arrow(pa.schema(fields + (
        [pa.field(DAY, pa.string()), pa.field(HOUR, pa.string())] if by_day else [])))


def _remove(directory: Path, tries: int = 100) -> None:
    """Remove a write's directory for good. A failed sink's thread may still create its file
    while the directory is being removed (the removal then finds it not empty): try again until
    the directory is gone, after which the sink can create nothing in it."""
    for _ in range(tries):
        shutil.rmtree(directory, ignore_errors=True)
        if not directory.exists():
            return
        time.sleep(0.01)


def streamed(frames: Iterator[pl.DataFrame]) -> pl.LazyFrame:
    """The frames an iterator gives, as one lazy frame that makes each only when its reader asks
    for it and lets go of it once read (a sink holds one at a time, not all); the first is taken
    at once for the schema. It can be collected once. Polars' IO-plugin interface is unstable:
    polars is pinned to a minor release for it."""
    waiting = [next(frames)]
    schema = waiting[0].schema

    def source(columns: list[str] | None, predicate: pl.Expr | None, rows: int | None,
               _batch: int | None) -> Iterator[pl.DataFrame]:
        left = rows
        while (frame := waiting.pop() if waiting else next(frames, None)) is not None:
            if predicate is not None:
                frame = frame.filter(predicate)
            if columns is not None:
                frame = frame.select(columns)
            if left is not None:
                frame, left = frame.head(left), left - min(left, frame.height)
            yield frame
            # Not held while the next is made.
            del frame
            if left == 0:
                return

    return register_io_source(source, schema=schema)


