"""The raw lake: Delta Lake tables, validated on write, appended and replaced in atomic commits."""

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pandera.polars as pa
import polars as pl
from deltalake import CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from core.caches import ByteCache
from core.frontiers import reached
from core.home import home
from core.store import NotFound, open_store
from sources import contract as schema

Partitioning = Literal["none", "chain", "date", "chain_date"]


@dataclass(frozen=True)
class LakeTable:
    """A raw table: its pandera model, partitioning, date column and sort key."""

    model: type[pa.DataFrameModel]
    partitioning: Partitioning
    key: tuple[str, ...]
    date_column: str | None = None

    def partition_columns(self) -> list[str]:
        """The Delta partition columns, in path order."""
        return {"none": [], "chain": ["chain_id"], "date": ["date"],
                "chain_date": ["chain_id", "date"]}[self.partitioning]


_EVENT_KEY = ("chain_id", "block_number", "log_index")

TABLES: dict[str, LakeTable] = {
    "chains": LakeTable(schema.Chain, "none", ("chain_id",)),
    "venues": LakeTable(schema.Venue, "chain", ("chain_id", "factory")),
    "heads": LakeTable(schema.Head, "chain_date", ("chain_id", "observed_at"), "observed_at"),
    "blocks": LakeTable(schema.Block, "chain_date", ("chain_id", "block_number"), "block_time"),
    "tokens": LakeTable(schema.Token, "chain", ("chain_id", "address")),
    "token_registry": LakeTable(schema.TokenRegistryEntry, "none", ("token_id",)),
    "token_instances": LakeTable(schema.TokenInstance, "none", ("token_id", "chain_id")),
    "token_profiles": LakeTable(schema.TokenProfile, "chain", ("chain_id", "address")),
    "pairs": LakeTable(schema.Pair, "chain", ("chain_id", "address")),
    "swaps": LakeTable(schema.Swap, "chain_date", _EVENT_KEY, "block_time"),
    "liquidity_events": LakeTable(schema.LiquidityEvent, "chain_date", _EVENT_KEY, "block_time"),
    "reserves": LakeTable(schema.Reserve, "chain_date", _EVENT_KEY, "block_time"),
    "transfers": LakeTable(schema.Transfer, "chain_date", _EVENT_KEY, "block_time"),
    "lp_locks": LakeTable(schema.LpLock, "chain", ("chain_id", "tx_hash")),
    "address_labels": LakeTable(schema.AddressLabel, "chain", ("chain_id", "address", "kind")),
    "farm_pools": LakeTable(
        schema.FarmObservation,
        "chain_date",
        ("chain_id", "farm_address", "pid", "observed_at"),
        "observed_at",
    ),
    "perp_markets": LakeTable(schema.PerpMarket, "chain", ("chain_id", "market")),
    "perp_snapshots": LakeTable(
        schema.PerpSnapshot, "chain_date", ("chain_id", "market", "observed_at"), "observed_at"
    ),
    "liquidations": LakeTable(schema.Liquidation, "chain_date", _EVENT_KEY, "block_time"),
    "liquidation_heartbeats": LakeTable(
        schema.LiquidationHeartbeat, "chain_date", ("chain_id", "observed_at"), "observed_at"
    ),
    "oracle_feeds": LakeTable(schema.OracleFeed, "none", ("feed_id",)),
    "oracle_updates": LakeTable(
        schema.OracleUpdate, "date", ("feed_id", "publish_time"), "publish_time"
    ),
}

# The lake's record of its last complete batch: a writer commits a batch's tables one by one,
# then replaces this object, naming the version each table reached, so a reader pins a state in
# which every table holds the same batches.
PROGRESS = "_progress.json"
# Versions older than this stay readable (a run pins the versions it started on); vacuum removes
# only files no version inside the window needs.
RETENTION = timedelta(hours=2)
# A partition with more files than this is rewritten as one by the maintenance job.
COMPACT_ABOVE_FILES = 8
# A writer's commit refused because compaction committed meanwhile is tried this many times.
COMMIT_TRIES = 5
# A table held open is opened afresh once it has moved on this many versions: brought up to
# date commit by commit, delta-rs's table keeps what each commit's log said (about 45 KB a
# commit), where a table opened anew replays from the last checkpoint and holds only the state.
REOPEN_AFTER_VERSIONS = 200
# A table of at most this size is read once per version and held: a week's liquidity events are
# a few thousand rows in over a thousand daily files, which cost more to open than to hold.
HELD_BYTES = 32 * 2**20
# What every lake of a process holds together: a live reader sees a new version of each table
# every few seconds, and only the newest few are read again.
HELD_TOTAL_BYTES = 128 * 2**20
_HELD: ByteCache[pl.DataFrame] = ByteCache(HELD_TOTAL_BYTES)


def default_root() -> str:
    """The lake: $CHAINTAPE_LAKE (a directory or s3://bucket/prefix), else $CHAINTAPE_HOME/lake."""
    return os.environ.get("CHAINTAPE_LAKE") or str(home() / "lake")


class LakeError(ValueError):
    """A write that breaks the lake contract."""


@dataclass(frozen=True)
class Progress:
    """The last complete batch a writer committed: its watermark and every table's version."""

    watermark: datetime
    writer: str
    step: int
    versions: dict[str, int]
    meta: dict[str, Any]


class Lake:
    """Reads and writes the raw tables under one root (a directory or an s3:// prefix). A lake
    opened with `versions` reads each of those tables as of that version.

    A lake opened with `keep_open` (a long-running writer or follower of the lake) keeps each
    table it opens at its newest version and reads only the commits made since on the next
    use, and the lakes it pins share them: opening a table replays its log (tens of
    milliseconds a table, growing with the commits since its checkpoint), and a live writer
    commits and marks every few seconds. A table dropped and written again by another process
    is told from the one held by its commit file's time (on a local lake; on S3 no other
    process may do so while the lake is open)."""

    def __init__(self, root: Path | str | None = None,
                 versions: dict[str, int] | None = None, keep_open: bool = False) -> None:
        root = str(root) if root is not None else default_root()
        self.remote = is_remote(root)
        self.root = root.rstrip("/") if self.remote else str(Path(root).absolute())
        self.versions = dict(versions) if versions is not None else None
        self.storage = storage_options() if self.remote else {}
        # The lake's own objects beside its tables (its progress mark), and whole tables removed.
        self.objects = open_store(self.root)
        # Up to when every table is complete, for a lake pinned to a writer's batch.
        self.watermark: datetime | None = None
        # Each table held open, with a version it was read at and when that version's commit
        # was written (writes through it move it on; a table written again elsewhere has
        # another commit at that version).
        self._open: dict[str, tuple[DeltaTable, int, int | None, int]] | None = (
            {} if keep_open else None)

    def uri(self, table: str) -> str:
        """Where a table's Delta log and files live."""
        return f"{self.root}/{table}"

    def write(self, table: str, frame: pl.DataFrame) -> int:
        """Validate `frame` and replace every partition it covers, in one commit; returns the
        table's new version. Writing the same rows again leaves the same rows."""
        spec, data = self._validated(table, frame)
        if data.is_empty():
            existing = self.version(table)
            if existing is not None:
                return existing
            return self._commit(table, spec, data, "append", None)
        return self._commit(table, spec, data, "overwrite", _covering(spec, data))

    def append(self, table: str, frame: pl.DataFrame) -> int:
        """Validate `frame` and add it in one commit; returns the table's new version."""
        spec, data = self._validated(table, frame)
        return self._commit(table, spec, data, "append", None)

    def replace(self, table: str, frame: pl.DataFrame, where: str) -> int:
        """Validate `frame` and, in one commit, remove the rows the SQL predicate `where`
        selects and add `frame` (every row of which it must select); returns the table's new
        version. How an ingester writes a block range again: the same rows again leave the
        same rows, and a reorg's orphaned rows go in the commit that adds the canonical ones."""
        spec, data = self._validated(table, frame)
        if self._table(table) is None:
            return self._commit(table, spec, data, "append", None)
        # Every partition the rows go to or leave is written again whole, in key order: Delta's
        # own predicate overwrite puts the new rows ahead of the ones it keeps in a file, and
        # products take a pair's first and last rows in the order a file holds them.
        selected = pl.sql_expr(where).fill_null(False)
        stored = self.scan(table)
        parts = spec.partition_columns()
        if spec.partitioning in ("date", "chain_date"):
            stored = stored.with_columns(date=_date_expr(spec))
        if parts:
            touched = stored.filter(selected).select(parts).unique().collect()
            covered = pl.concat([touched, data.select(parts)]).unique()
            if covered.is_empty():
                return int(self.version(table) or 0)
            stored = stored.join(covered.lazy(), on=parts, how="semi")
        kept = stored.filter(~selected).collect()
        rows = pl.concat([kept, data], how="vertical_relaxed").sort(list(spec.key))
        return self._commit(table, spec, rows, "overwrite",
                            _covering(spec, covered) if parts else None)

    def restore(self, table: str, version: int | None) -> None:
        """Put a table back as it was at `version` (None: remove it), in one commit: how a
        writer undoes the tables of a batch it began and did not mark."""
        delta = self._table(table)
        if delta is None:
            return
        if version is None:
            self.drop(table)
        else:
            delta.restore(version)

    def roll_back(self, mark: Progress) -> None:
        """Restore every table committed after `mark` as the mark names it: how a writer
        starting again undoes the batch it began and did not mark."""
        for name, version in self.current_versions().items():
            if version > mark.versions.get(name, -1):
                self.restore(name, mark.versions.get(name))

    def scan(self, table: str, day: str | tuple[str, ...] | None = None) -> pl.LazyFrame:
        """A table as one lazy frame (empty with its schema when absent): its files in partition
        order and, inside a partition, by their earliest time and smallest key, so a chain's
        events come in block and log order; with `day` (YYYY-MM-DD, or several), only those
        dates' partitions. A table of at most HELD_BYTES is read once per version and held (in a
        cache bounded by HELD_TOTAL_BYTES)."""
        spec = _spec(table)
        delta = self._table(table)
        if delta is None:
            return pl.LazyFrame(schema=_polars_schema(spec.model))
        # A table dropped and written again starts again at version 0: its id tells them apart.
        stamp = (self.uri(table), str(delta.metadata().id), delta.version(), day)
        held = _HELD.get(stamp)
        if held is not None:
            return held.lazy()
        files, size = self._files(table, delta, spec, day)
        columns = list(spec.model.to_schema().columns)
        if not files:
            return pl.LazyFrame(schema=_polars_schema(spec.model))
        hive = {c: (pl.Int64 if c == "chain_id" else pl.String) for c in spec.partition_columns()}
        frame = pl.scan_parquet(files, hive_partitioning=bool(hive), hive_schema=hive or None,
                                storage_options=polars_options(self.storage) or None,
                                missing_columns="insert").select(columns)
        if size > HELD_BYTES:
            return frame
        read = frame.collect()
        return _HELD.put(stamp, read, int(read.estimated_size())).lazy()

    def read(self, table: str) -> pl.DataFrame:
        """A whole table, materialised."""
        return self.scan(table).collect()

    def days(self, table: str) -> list[str]:
        """The dates (YYYY-MM-DD) a table partitioned by date holds rows of, in order."""
        return _days(self._dated(table)[1])

    def offsets(self, table: str) -> dict[str, int]:
        """Where each date's rows start in the table as `scan` reads it (dates first): the
        number of rows of the earlier dates, from the Delta log's statistics."""
        actions = self._dated(table)[1]
        counts = (actions.group_by("partition.date").agg(pl.col("num_records").sum())
                  .sort("partition.date"))
        starts = counts["num_records"].cum_sum() - counts["num_records"]
        return dict(zip(counts["partition.date"].to_list(), starts.to_list(), strict=True))

    def changed_days(self, table: str, since: int | None) -> list[str]:
        """The dates whose partitions gained or lost files after version `since` (every date
        when `since` is None, or when that version can no longer be read), in order."""
        delta, now = self._dated(table)
        if delta is None or since is None or since > delta.version():
            return _days(now)
        try:
            before = DeltaTable(self.uri(table), version=since, storage_options=self.storage or None)
        except (TableNotFoundError, DeltaError):
            return _days(now)
        then = _actions(before)
        if now.is_empty() or then.is_empty():
            return _days(now)
        moved = [a.join(b, on="path", how="anti").select("partition.date")
                 for a, b in ((now, then), (then, now))]
        return _days(pl.concat(moved))

    def _dated(self, table: str) -> tuple[DeltaTable | None, pl.DataFrame]:
        """A table partitioned by date and its live files' add actions (none when absent or
        not partitioned by date)."""
        delta = self._table(table)
        if delta is None or "date" not in _spec(table).partition_columns():
            return None, pl.DataFrame(schema={"path": pl.String, "partition.date": pl.String,
                                              "num_records": pl.Int64})
        return delta, _actions(delta)

    def frontier(self, table: str) -> dict[int, int]:
        """A table of chain events: each chain's highest block among its rows, from the Delta
        log's statistics (a chain's events are appended in block order, so every row past it
        was committed later)."""
        delta = self._table(table)
        if delta is None:
            return {}
        found = (_actions(delta).group_by("partition.chain_id")
                 .agg(pl.col("max.block_number").max()))
        return {int(c): int(b) for c, b in found.iter_rows() if b is not None}

    def day_files(self, table: str) -> dict[str, list[str]]:
        """A table partitioned by date: each date's live files (paths in the table, which a
        write never reuses: a date's files name its rows), in order."""
        actions = self._dated(table)[1].sort("path")
        return dict(actions.group_by("partition.date").agg(pl.col("path"))
                    .sort("partition.date").iter_rows())

    def files(self, table: str) -> list[str]:
        """The table's live data files, in read order."""
        delta = self._table(table)
        return [] if delta is None else self._files(table, delta, _spec(table))[0]

    def version(self, table: str) -> int | None:
        """The table's current Delta version as this lake reads it (None when absent)."""
        delta = self._table(table)
        return None if delta is None else delta.version()

    def current_versions(self) -> dict[str, int]:
        """Every present table's latest version."""
        return {name: delta.version() for name in TABLES
                if (delta := self._latest(name)) is not None}

    def drop(self, table: str) -> None:
        """Remove a whole table, before a producer rewrites all of it."""
        _spec(table)
        self._forget(table)
        self._remove(table)

    def tables(self) -> list[str]:
        """The tables that hold at least one row."""
        return [name for name in TABLES if self.files(name)]

    def mark(self, watermark: datetime, writer: str, step: int = 0,
             meta: dict[str, Any] | None = None) -> Progress:
        """Record a complete batch: every table's current version, up to `watermark`, in one
        object replaced whole (a rename, or an S3 put)."""
        progress = Progress(watermark, writer, step, self.current_versions(), dict(meta or {}))
        body = json.dumps({"watermark": watermark.isoformat(), "writer": writer, "step": step,
                           "versions": progress.versions, "meta": progress.meta,
                           "written_at": datetime.now(UTC).isoformat()},
                          sort_keys=True, default=str).encode()
        self.objects.put(PROGRESS, body, "application/json", "no-store")
        return progress

    def progress(self) -> Progress | None:
        """The last complete batch, or None when no writer has marked one."""
        try:
            body = self.objects.get(PROGRESS).body
        except NotFound:
            return None
        fields = json.loads(body)
        return Progress(datetime.fromisoformat(fields["watermark"]), fields["writer"],
                        int(fields["step"]), fields["versions"], fields["meta"])

    def pinned(self) -> "Lake":
        """This lake as of its last complete batch (as it stands when no batch was marked);
        its `watermark` is that batch's."""
        progress = self.progress()
        lake = Lake(self.root, progress.versions if progress else self.current_versions())
        lake.watermark = progress.watermark if progress else None
        lake._open = self._open
        return lake

    def compact(self, table: str, tries: int = 3) -> int:
        """Rewrite each partition holding more than COMPACT_ABOVE_FILES files as one file in key
        order; returns the partitions rewritten. Each is its own commit against the version it
        read: a writer appending to the same partition meanwhile makes it fail, and it is tried
        again (then left for the next run), so no appended row is ever lost."""
        spec = _spec(table)
        done = 0
        for values in self._crowded(table):
            for _ in range(tries):
                try:
                    self._compact(table, spec, values)
                except CommitFailedError:
                    continue
                done += 1
                break
        return done

    def _crowded(self, table: str) -> list[dict[str, Any]]:
        delta = self._table(table)
        if delta is None:
            return []
        actions = _actions(delta)
        parts = [c for c in actions.columns if c.startswith("partition.")]
        if not parts:
            return [{}] if actions.height > COMPACT_ABOVE_FILES else []
        counts = actions.group_by(parts).len().filter(pl.col("len") > COMPACT_ABOVE_FILES)
        return [{k.removeprefix("partition."): v for k, v in row.items()}
                for row in counts.drop("len").to_dicts()]

    def _compact(self, table: str, spec: LakeTable, names: dict[str, Any]) -> None:
        delta = DeltaTable(self.uri(table), storage_options=self.storage or None)
        data = Lake(self.root, {table: delta.version()}).scan(table)
        if "chain_id" in names:
            data = data.filter(pl.col("chain_id") == names["chain_id"])
        if "date" in names:
            data = data.filter(_date_expr(spec) == names["date"])
        frame = data.collect()
        if spec.partitioning in ("date", "chain_date"):
            frame = frame.with_columns(date=_date_expr(spec))
        predicate = " AND ".join(f"{k} = {_literal(v)}" for k, v in names.items()) or None
        write_deltalake(delta, _ordered(frame.sort(list(spec.key))),
                        partition_by=spec.partition_columns() or None, mode="overwrite",
                        predicate=predicate, storage_options=self.storage or None,
                        writer_properties=_properties(), commit_properties=CommitProperties(
                            custom_metadata={"chaintape": "compact"}))

    def vacuum(self, table: str, retention: timedelta = RETENTION) -> list[str]:
        """Delete the files no version younger than `retention` reads, and the log entries
        before the last checkpoint past it; returns the files deleted."""
        delta = self._table(table)
        if delta is None:
            return []
        deleted = delta.vacuum(retention_hours=max(0, int(retention.total_seconds() // 3600)),
                               dry_run=False, enforce_retention_duration=False)
        delta.create_checkpoint()
        delta.cleanup_metadata()
        return deleted

    def _validated(self, table: str, frame: pl.DataFrame) -> tuple[LakeTable, pl.DataFrame]:
        spec = _spec(table)
        try:
            spec.model.validate(frame, lazy=True)
        except pa.errors.SchemaErrors as err:
            raise LakeError(f"{table}: {err.failure_cases.head(5)}") from err
        data = frame.select(list(spec.model.to_schema().columns)).sort(list(spec.key))
        if spec.partitioning in ("date", "chain_date"):
            data = data.with_columns(date=_date_expr(spec))
        return spec, data

    def _commit(self, table: str, spec: LakeTable, data: pl.DataFrame,
                mode: Literal["append", "overwrite"], predicate: str | None) -> int:
        partitions = spec.partition_columns() or None
        rows = _ordered(data)

        def write(target: str | DeltaTable) -> None:
            if mode == "append":
                write_deltalake(target, rows, partition_by=partitions, mode="append",
                                storage_options=self.storage or None,
                                writer_properties=_properties())
            else:
                write_deltalake(target, rows, partition_by=partitions, mode="overwrite",
                                predicate=predicate, storage_options=self.storage or None,
                                writer_properties=_properties())

        def attempt() -> None:
            held = None if self._open is None else self._latest(table)
            write(self.uri(table) if held is None else held)

        committed([attempt] * COMMIT_TRIES)
        written = self._latest(table)
        if written is None:
            raise LakeError(f"{table}: committed, then not found at {self.uri(table)}")
        return int(written.version())

    def _table(self, table: str) -> DeltaTable | None:
        """The table as this lake reads it: latest, or at its pinned version (None when absent
        or not part of the pinned state)."""
        if self.versions is None:
            return self._latest(table)
        pinned = self.versions.get(table)
        if pinned is None:
            return None
        # A follower pins the lake's last mark, most often every table's newest version: the
        # table held is opened, or brought up to date, only when it is not there or behind.
        held = self._held(table)
        if self._open is not None and (held is None or held.version() < pinned):
            held = self._latest(table)
        if held is not None and held.version() == pinned:
            return held
        try:
            return DeltaTable(self.uri(table), version=pinned,
                              storage_options=self.storage or None)
        except TableNotFoundError:
            return None

    def _latest(self, table: str) -> DeltaTable | None:
        """The table at its newest version (None when absent): a lake keeping its tables open
        brings the one it holds up to date."""
        held = self._held(table)
        if held is not None:
            try:
                held.update_incremental()
            except DeltaError:
                self._forget(table)  # its log gone under it (the table dropped): opened again
            else:
                if held.version() - self._opened(table) < REOPEN_AFTER_VERSIONS:
                    self._hold(table, held)
                    return held
                self._forget(table)
        try:
            delta = DeltaTable(self.uri(table), storage_options=self.storage or None)
        except TableNotFoundError:
            return None
        self._hold(table, delta)
        return delta

    def _held(self, table: str) -> DeltaTable | None:
        """The table this lake holds open, unless it was dropped and written again since."""
        if self._open is None or table not in self._open:
            return None
        held, version, written, _ = self._open[table]
        if written != self._written(table, version):
            self._forget(table)
            return None
        return held

    def _forget(self, table: str) -> None:
        if self._open is not None:
            self._open.pop(table, None)

    def _hold(self, table: str, delta: DeltaTable) -> None:
        if self._open is not None:
            version = delta.version()
            opened = self._open[table][3] if table in self._open else version
            self._open[table] = (delta, version, self._written(table, version), opened)

    def _opened(self, table: str) -> int:
        """The version a held table was opened at."""
        return self._open[table][3] if self._open is not None and table in self._open else 0

    def _written(self, table: str, version: int) -> int | None:
        """When a local table's commit file of `version` was written (None on S3, or gone)."""
        if self.remote:
            return None
        try:
            return os.stat(f"{self.uri(table)}/_delta_log/{version:020d}.json").st_mtime_ns
        except FileNotFoundError:
            return None

    def past(self, table: str, frontier: Mapping[int, int]) -> pl.LazyFrame:
        """A chain event table's rows past each chain's `frontier` block (a chain it does not
        name: all its rows), in read order; only the files whose statistics say they may hold
        such rows are read: those a writer added since, and what compaction made of them."""
        spec = _spec(table)
        delta = self._table(table)
        if delta is None:
            return pl.LazyFrame(schema=_polars_schema(spec.model))
        files = self._ordered(table, spec, _past_actions(delta, frontier))[0]
        if not files:
            return pl.LazyFrame(schema=_polars_schema(spec.model))
        hive = {c: (pl.Int64 if c == "chain_id" else pl.String) for c in spec.partition_columns()}
        return (pl.scan_parquet(files, hive_partitioning=True, hive_schema=hive,
                                storage_options=polars_options(self.storage) or None,
                                missing_columns="insert")
                .select(list(spec.model.to_schema().columns))
                .filter(pl.col("block_number") > reached(frontier)))

    def past_files(self, table: str, frontier: Mapping[int, int]) -> pl.DataFrame:
        """The files `past` reads for `frontier`: each one's path, chain and lowest block. A
        reader that has taken a table's rows up to some block knows from them whether anything
        it took was written again since (a reorg, a range read again, compaction): a file it
        read is gone, or a new one reaches back to what it took."""
        delta = self._table(table)
        actions = None if delta is None else _past_actions(delta, frontier)
        if actions is None or actions.is_empty():
            return pl.DataFrame(schema={"path": pl.String, "chain_id": pl.Int64,
                                        "min_block": pl.Int64})
        return actions.select("path", chain_id=pl.col("partition.chain_id").cast(pl.Int64),
                              min_block=pl.col("min.block_number").cast(pl.Int64))

    def _files(self, table: str, delta: DeltaTable, spec: LakeTable,
               day: str | tuple[str, ...] | None = None) -> tuple[list[str], int]:
        actions = _actions(delta)
        if day is not None and not actions.is_empty():
            actions = actions.filter(pl.col("partition.date").is_in(
                [day] if isinstance(day, str) else list(day)))
        return self._ordered(table, spec, actions)

    def _ordered(self, table: str, spec: LakeTable,
                 actions: pl.DataFrame) -> tuple[list[str], int]:
        """Files of add actions in read order, and their bytes."""
        if actions.is_empty():
            return [], 0
        # Date first: a day's rows keep their place in the table however much later days grow,
        # so what is derived a day at a time can point into it (see `offsets`).
        parts = sorted((f"partition.{c}" for c in spec.partition_columns()),
                       key=lambda c: c != "partition.date")
        # A partition's files are appended in time order and do not overlap (a chain's events
        # in block and log order), and compaction sorts by key, so each file's earliest time,
        # then its smallest key, places it.
        firsts = [c for c in (spec.date_column, *spec.key) if c]
        order = parts + [f"min.{c}" for c in firsts if f"min.{c}" in actions.columns] + ["path"]
        actions = actions.sort(order, nulls_last=True)
        base = self.uri(table)
        return [f"{base}/{p}" for p in actions["path"]], int(actions["size_bytes"].sum())

    def _remove(self, table: str) -> None:
        self.objects.remove(table)


def committed(attempts: list[Callable[[], None]]) -> None:
    """Run the first attempt whose commit is not refused. Delta refuses a commit when a
    concurrent one removed files of the version it started from (the lake's compaction
    rewriting a crowded partition): nothing of it was committed, so trying again against the
    new version writes it once. The last attempt's refusal is raised."""
    for attempt in attempts[:-1]:
        try:
            attempt()
            return
        except CommitFailedError:
            continue
    attempts[-1]()


def _properties() -> WriterProperties:
    """zstd, as the lake's files were before they were Delta tables."""
    return WriterProperties(compression="ZSTD")


def _ordered(frame: pl.DataFrame) -> Any:
    """The frame as one Arrow batch: delta-rs writes the batches of a table concurrently and
    interleaves their rows, and a partition's file must keep the key order."""
    return frame.rechunk().to_arrow()


def _actions(delta: DeltaTable) -> pl.DataFrame:
    return pl.DataFrame(delta.get_add_actions(flatten=True))


def _past_actions(delta: DeltaTable, frontier: Mapping[int, int]) -> pl.DataFrame:
    """The add actions of the files whose statistics say they may hold rows past each chain's
    `frontier` block."""
    actions = _actions(delta)
    if actions.is_empty():
        return actions
    return actions.filter(pl.col("max.block_number") > reached(frontier, "partition.chain_id"))


def _days(actions: pl.DataFrame) -> list[str]:
    """The dates of add actions, each once, in order."""
    return [] if actions.is_empty() else actions["partition.date"].unique().sort().to_list()


def is_remote(root: str) -> bool:
    """Whether a root names an object store prefix (s3://bucket/prefix) rather than a
    directory."""
    return "://" in root


def storage_options() -> dict[str, str]:
    """S3 settings from the environment, as delta-rs takes them: the endpoint (moto, MinIO),
    region and credentials."""
    options = {"AWS_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
               # One writer per table: the lake's writers never commit to a table together,
               # nor do two steps to one product.
               "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        options["AWS_ALLOW_HTTP"] = "true" if endpoint.startswith("http://") else "false"
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if os.environ.get(name):
            options[name] = os.environ[name]
    return options


def polars_options(storage: dict[str, str]) -> dict[str, str]:
    """The same settings as polars' readers take them."""
    return {k.lower(): v for k, v in storage.items()}


def _spec(table: str) -> LakeTable:
    try:
        return TABLES[table]
    except KeyError:
        raise LakeError(f"unknown lake table {table!r}; known: {', '.join(TABLES)}") from None


def _date_expr(spec: LakeTable) -> pl.Expr:
    if spec.date_column is None:
        raise LakeError(f"{spec.model.__name__} is partitioned by date but names no date column")
    column = pl.col(spec.date_column)
    if spec.date_column == "publish_time":
        column = pl.from_epoch(column, time_unit="s")
    return column.dt.date().cast(pl.String)


def _literal(value: object) -> str:
    return str(value) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"


def _covering(spec: LakeTable, data: pl.DataFrame) -> str | None:
    """The predicate naming exactly the partitions `data` covers (None: the whole table)."""
    columns = spec.partition_columns()
    if not columns:
        return None
    combos = data.select(columns).unique().sort(columns).rows()
    return " OR ".join("(" + " AND ".join(f"{c} = {_literal(v)}" for c, v in
                                          zip(columns, combo, strict=True)) + ")"
                       for combo in combos)


def lake_schema(table: str) -> dict[str, pl.DataType]:
    """A raw table's columns and their polars types, as the contract fixes them."""
    return _polars_schema(_spec(table).model)


def _polars_schema(model: type[pa.DataFrameModel]) -> dict[str, pl.DataType]:
    return {name: column.dtype.type for name, column in model.to_schema().columns.items()}
