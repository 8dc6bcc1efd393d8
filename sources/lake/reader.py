"""Reading the lake: its tables as they stand or as of a batch's versions, each table held
open by a long-running reader, and the progress mark a writer leaves."""

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import polars as pl
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from core.caches import ByteCache
from core.delta import DeltaRoot, add_actions
from core.frontiers import reached
from core.progress import Progress, default_root, read_progress
from core.store import open_store
from sources.lake.tables import TABLES, LakeTable, polars_schema, spec_of

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
# The stamp of the newest version of each table (and day) held.
_NEWEST_HELD: dict[tuple, tuple] = {}


def _past_actions(delta: DeltaTable, frontier: Mapping[int, int]) -> pl.DataFrame:
    """The add actions of the files whose statistics say they may hold rows past each chain's
    `frontier` block."""
    actions = add_actions(delta)
    if actions.is_empty():
        return actions
    return actions.filter(pl.col("max.block_number") > reached(frontier, "partition.chain_id"))


# How many commits back `earliest_new` reads a table's history: a live writer commits every
# few seconds, so this is the better part of an hour's; further back, every row counts as new.
LOOKBACK = 512
# Commits that add rows at the end of their streams or leave the rows as they were.
_KEEPING = frozenset({"SET TBLPROPERTIES", "VACUUM START", "VACUUM END", "OPTIMIZE"})


def _keeps_rows(commit: dict[str, Any]) -> bool:
    if commit.get("chaintape") == "compact" or commit["operation"] in _KEEPING:
        return True
    return (commit["operation"] == "WRITE"
            and commit.get("operationParameters", {}).get("mode") == "Append")


def _days(actions: pl.DataFrame) -> list[str]:
    """The dates of add actions, each once, in order."""
    return [] if actions.is_empty() else actions["partition.date"].unique().sort().to_list()


class LakeReader:
    """Reads the raw tables under one root (a directory or an s3:// prefix). A lake opened
    with `versions` reads each of those tables as of that version.

    A lake opened with `keep_open` (a long-running writer or follower of the lake) keeps each
    table it opens at its newest version and reads only the commits made since on the next
    use, and the lakes it pins share them: opening a table replays its log (tens of
    milliseconds a table, growing with the commits since its checkpoint), and a live writer
    commits and marks every few seconds. A table dropped and written again by another process
    is told from the one held by its commit file's time (on a local lake; on S3 no other
    process may do so while the lake is open)."""

    def __init__(self, root: Path | str | None = None,
                 versions: dict[str, int] | None = None, keep_open: bool = False) -> None:
        # Where its tables live, and the S3 settings they are read with.
        self.delta = DeltaRoot.at(root if root is not None else default_root())
        self.versions = dict(versions) if versions is not None else None
        # The lake's own objects beside its tables (its progress mark), and whole tables removed.
        self.objects = open_store(self.delta.root)
        # Up to when every table is complete, for a lake pinned to a writer's batch.
        self.watermark: datetime | None = None
        # The writer of the batch a pinned lake stands at (None unpinned or unmarked).
        self.writer: str | None = None
        # Each table held open, with a version it was read at and when that version's commit
        # was written (writes through it move it on; a table written again elsewhere has
        # another commit at that version).
        self._open: dict[str, tuple[DeltaTable, int, int | None, int]] | None = (
            {} if keep_open else None)

    @property
    def root(self) -> str:
        """The lake's directory or s3:// prefix."""
        return self.delta.root

    @property
    def remote(self) -> bool:
        """Whether the lake lives under an S3 prefix rather than in a directory."""
        return self.delta.remote

    def uri(self, table: str) -> str:
        """Where a table's Delta log and files live."""
        return self.delta.uri(table)

    def scan(self, table: str, day: str | tuple[str, ...] | None = None) -> pl.LazyFrame:
        """A table as one lazy frame (empty with its schema when absent): its files in partition
        order and, inside a partition, by their earliest time and smallest key, so a chain's
        events come in block and log order; with `day` (YYYY-MM-DD, or several), only those
        dates' partitions. A table of at most HELD_BYTES is read once per version and held (in a
        cache bounded by HELD_TOTAL_BYTES)."""
        spec = spec_of(table)
        delta = self._table(table)
        if delta is None:
            return pl.LazyFrame(schema=polars_schema(spec.model))
        # A table dropped and written again starts again at version 0: its id tells them apart.
        stamp = (self.uri(table), str(delta.metadata().id), delta.version(), day)
        held = _HELD.get(stamp)
        if held is not None:
            return held.lazy()
        files, size = self._files(table, delta, spec, day)
        columns = list(spec.model.to_schema().columns)
        if not files:
            return pl.LazyFrame(schema=polars_schema(spec.model))
        hive = {c: (pl.Int64 if c == "chain_id" else pl.String) for c in spec.partition_columns()}
        # A table whose contract gained columns is read by the contract's schema, not its
        # first file's, so that files from before and after hold the same columns.
        given = ({c: t for c, t in polars_schema(spec.model).items() if c not in hive}
                 if spec.added else None)
        frame = pl.scan_parquet(files, hive_partitioning=bool(hive), hive_schema=hive or None,
                                storage_options=self.delta.polars_options(),
                                schema=given, missing_columns="insert").select(columns)
        if spec.added:
            frame = frame.with_columns(pl.col(c).fill_null(pl.lit(v)) for c, v in spec.added
                                       if v is not None)
        if size > HELD_BYTES:
            return frame
        read = frame.collect()
        # A live reader wants a table's newest version only: the one it held before goes (a
        # table committed every second would otherwise fill the cache with its past versions).
        newest = stamp[:2] + stamp[3:]
        before = _NEWEST_HELD.get(newest)
        if before is not None and before[2] < stamp[2]:
            _HELD.forget(before)
        _NEWEST_HELD[newest] = stamp
        return _HELD.put(stamp, read, int(read.estimated_size())).lazy()

    def read(self, table: str) -> pl.DataFrame:
        """A whole table, materialised."""
        return self.scan(table).collect()

    def days(self, table: str) -> list[str]:
        """The dates (YYYY-MM-DD) a table partitioned by date holds rows of, in order."""
        return _days(self._dated(table)[1])

    def days_made(self, table: str) -> list[str]:
        """The dates a table's day partitions are made for: those it holds rows of, or, before
        its first row (a chain followed from before its first swap), the date the lake's
        watermark stands at."""
        days = self.days(table)
        if days:
            return days
        at = self.watermark
        if at is None:
            mark = self.progress()
            at = None if mark is None else mark.watermark
        return [] if at is None else [f"{at:%Y-%m-%d}"]

    def changed_days(self, table: str, since: int | None) -> list[str]:
        """The dates whose partitions gained or lost files after version `since` (every date
        when `since` is None, or when that version can no longer be read), in order."""
        delta, now = self._dated(table)
        if delta is None or since is None or since > delta.version():
            return _days(now)
        before = self._read_at(table, since)
        if before is None:
            return _days(now)
        then = add_actions(before)
        if now.is_empty() or then.is_empty():
            return _days(now)
        moved = [a.join(b, on="path", how="anti").select("partition.date")
                 for a, b in ((now, then), (then, now))]
        return _days(pl.concat(moved))

    def _dated(self, table: str) -> tuple[DeltaTable | None, pl.DataFrame]:
        """A table partitioned by date and its live files' add actions (none when absent or
        not partitioned by date)."""
        delta = self._table(table)
        if delta is None or "date" not in spec_of(table).partition_columns():
            return None, pl.DataFrame(schema={"path": pl.String, "partition.date": pl.String,
                                              "num_records": pl.Int64})
        return delta, add_actions(delta)

    def earliest_new(self, table: str, since: int | None, dates: tuple[str, ...]
                     ) -> datetime | None:
        """The earliest time among the rows of `dates` this lake holds and version `since` of
        the table did not (None when there are none). Each stream (a chain's events, a feed's
        updates) is appended in order, so its rows past its last at `since` are the new ones,
        and a compaction keeps the rows it rewrites. Any other change since (a reorg's
        rewrite, a roll-back), no `since`, or one no longer readable: the earliest of every
        row."""
        spec = spec_of(table)
        time = spec.date_column
        if time is None:
            raise ValueError(f"{table} is not a table of dated rows")
        stream = spec.key[0]
        order = "block_number" if "block_number" in spec.key else time
        appended = since is not None and self._appended_since(table, since)
        if since is not None and appended:
            told, found = self._earliest_by_statistics(table, since, dates)
            if told:
                return found
        now = self.scan(table, dates).select(*dict.fromkeys((stream, order, time)))
        # A time in seconds since the epoch (an oracle update's) is read as an instant.
        at = pl.col(time)
        earliest = (pl.from_epoch(at, "s").dt.replace_time_zone("UTC")
                    if now.collect_schema()[time].is_integer() else at).min()
        if since is None or not appended:
            return now.select(earliest).collect().item()
        try:
            last = (LakeReader(self.root, {table: since}).scan(table, dates)
                    .group_by(stream).agg(_last=pl.col(order).max()).collect())
        except (TableNotFoundError, DeltaError, FileNotFoundError, pl.exceptions.ComputeError):
            return now.select(earliest).collect().item()
        return (now.join(last.lazy(), on=stream, how="left")
                .filter(pl.col("_last").is_null() | (pl.col(order) > pl.col("_last")))
                .select(earliest).collect().item())

    def _earliest_by_statistics(self, table: str, since: int, dates: tuple[str, ...]
                                ) -> tuple[bool, datetime | None]:
        """`earliest_new` from the Delta log's statistics alone, where they tell (first: True):
        every file of `dates` added since version `since` begins past its stream's last row
        then (its chain's last block, or the table's last time), so all its rows are new and
        the earliest is the least of their files' earliest times. They do not tell where a
        compaction's file holds rows from before, or a file has no statistics: the rows are
        read."""
        spec = spec_of(table)
        time, stream = spec.date_column, spec.key[0]
        order = "block_number" if "block_number" in spec.key else time
        now, then = self._table(table), self._read_at(table, since)
        if now is None or then is None:
            return False, None
        wanted = pl.col("partition.date").is_in(list(dates))
        added, before = (add_actions(delta) for delta in (now, then))
        stats = [f"min.{order}", f"max.{order}", f"min.{time}"]
        if any(c not in frame.columns for frame in (added, before) for c in stats):
            return False, None
        added = added.filter(wanted).join(before.select("path"), on="path", how="anti")
        if added.is_empty():
            return True, None
        by = [f"partition.{stream}"] if stream in spec.partition_columns() else []
        last = before.filter(wanted).group_by(*by).agg(_last=pl.col(f"max.{order}").max())
        added = (added.join(last, on=by, how="left") if by
                 else added.with_columns(_last=pl.lit(last["_last"].max())))
        if added.select(pl.col(f"min.{time}").is_null().any()
                        | (pl.col(f"min.{order}") <= pl.col("_last")).any()).item():
            return False, None
        first = added[f"min.{time}"].min()
        if isinstance(first, int):
            return True, datetime.fromtimestamp(first, UTC)
        return (True, first.astimezone(UTC)) if isinstance(first, datetime) else (False, None)

    def _read_at(self, table: str, version: int) -> DeltaTable | None:
        """A table at an earlier version, to read (`DeltaRoot.read`); None when absent or no
        longer readable (its log or checkpoint gone)."""
        try:
            return self.delta.read(table, version)
        except DeltaError:
            return None

    def _appended_since(self, table: str, since: int) -> bool:
        """Whether every commit to a table after version `since` appended rows or kept them
        (a compaction, the maintenance's own): what `earliest_new` reads new rows from."""
        delta = self._table(table)
        if delta is None or since > delta.version() or delta.version() - since > LOOKBACK:
            return False
        if since == delta.version():
            return True
        commits = [c for c in delta.history(delta.version() - since) if c["version"] > since]
        return len(commits) == delta.version() - since and all(
            _keeps_rows(commit) for commit in commits)

    def frontier(self, table: str) -> dict[int, int]:
        """A table of chain events: each chain's highest block among its rows, from the Delta
        log's statistics (a chain's events are appended in block order, so every row past it
        was committed later)."""
        delta = self._table(table)
        if delta is None:
            return {}
        found = (add_actions(delta).group_by("partition.chain_id")
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
        return [] if delta is None else self._files(table, delta, spec_of(table))[0]

    def version(self, table: str) -> int | None:
        """The table's current Delta version as this lake reads it (None when absent)."""
        delta = self._table(table)
        return None if delta is None else delta.version()

    def current_versions(self) -> dict[str, int]:
        """Every present table's latest version."""
        return {name: delta.version() for name in TABLES
                if (delta := self.latest(name)) is not None}

    def tables(self) -> list[str]:
        """The tables that hold at least one row."""
        return [name for name in TABLES if self.files(name)]

    def progress(self) -> Progress | None:
        """The last complete batch, or None when no writer has marked one."""
        return read_progress(self.objects)

    def pinned(self, mark: Progress | None = None) -> Self:
        """This lake as of its last complete batch (as it stands when no batch was marked), or
        as of `mark` when the caller has just read it; its `watermark` is that batch's."""
        progress = mark or self.progress()
        lake = type(self)(self.root, progress.versions if progress else self.current_versions())
        lake.watermark = progress.watermark if progress else None
        lake.writer = progress.writer if progress else None
        lake._open = self._open
        return lake

    def _table(self, table: str) -> DeltaTable | None:
        """The table as this lake reads it: latest, or at its pinned version (None when absent
        or not part of the pinned state)."""
        if self.versions is None:
            return self.latest(table)
        pinned = self.versions.get(table)
        if pinned is None:
            return None
        # A follower pins the lake's last mark, most often every table's newest version: the
        # table held is opened, or brought up to date, only when it is not there or behind.
        held = self._held(table)
        if self._open is not None and (held is None or held.version() < pinned):
            held = self.latest(table)
        if held is not None and held.version() == pinned:
            return held
        # A batch's reader (a run's) reads the same tables at the same versions again and
        # again; a long-running one holds its own.
        return self.delta.open(table, pinned) if self._open is not None else self.delta.read(
            table, pinned)

    def latest(self, table: str) -> DeltaTable | None:
        """A table at its newest version (None when absent): a lake keeping its tables open
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
        delta = self.delta.open(table)
        if delta is None:
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
        return self.delta.committed_at(table, version)

    def past(self, table: str, frontier: Mapping[int, int]) -> pl.LazyFrame:
        """A chain event table's rows past each chain's `frontier` block (a chain it does not
        name: all its rows), in read order; only the files whose statistics say they may hold
        such rows are read: those a writer added since, and what compaction made of them."""
        spec = spec_of(table)
        delta = self._table(table)
        if delta is None:
            return pl.LazyFrame(schema=polars_schema(spec.model))
        files = self._ordered(table, spec, _past_actions(delta, frontier))[0]
        if not files:
            return pl.LazyFrame(schema=polars_schema(spec.model))
        hive = {c: (pl.Int64 if c == "chain_id" else pl.String) for c in spec.partition_columns()}
        return (pl.scan_parquet(files, hive_partitioning=True, hive_schema=hive,
                                storage_options=self.delta.polars_options(),
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
        actions = add_actions(delta)
        if day is not None and not actions.is_empty():
            actions = actions.filter(pl.col("partition.date").is_in(
                [day] if isinstance(day, str) else list(day)))
        return self._ordered(table, spec, actions)

    def _ordered(self, table: str, spec: LakeTable,
                 actions: pl.DataFrame) -> tuple[list[str], int]:
        """Files of add actions in read order, and their bytes."""
        if actions.is_empty():
            return [], 0
        # Date first: a day's rows come together, in the same order however much later days
        # grow.
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
