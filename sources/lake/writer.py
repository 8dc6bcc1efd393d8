"""Writing the lake: rows validated against the contract, appended or replaced in atomic
commits (a partition a replace touches written again whole, in key order), and the progress
mark that makes a batch visible."""

import contextlib
import fcntl
import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandera.polars as pa
import polars as pl
from deltalake import DeltaTable, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError

from core.home import home
from core.progress import PROGRESS, Progress
from sources.lake.reader import LakeReader
from sources.lake.tables import LakeError, LakeTable, covering, date_expr, spec_of

# A writer's commit refused because compaction committed meanwhile is tried this many times.
COMMIT_TRIES = 5


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


# A table's log keeps its commits, and its checkpoints the files it removed, for a few times the
# window a reader may pin (the maintenance's RETENTION, 2 hours), not Delta's 30 and 7 days: a
# table committed every second for days keeps a log of hours, and opening it stays cheap.
LOG_PROPERTIES = {"delta.logRetentionDuration": "interval 6 hours",
                  "delta.deletedFileRetentionDuration": "interval 2 hours"}


def writer_properties() -> WriterProperties:
    """zstd, as the lake's files were before they were Delta tables."""
    return WriterProperties(compression="ZSTD")


def one_batch(frame: pl.DataFrame) -> Any:
    """The frame as one Arrow batch: delta-rs writes the batches of a table concurrently and
    interleaves their rows, and a partition's file must keep the key order."""
    return frame.rechunk().to_arrow()


class LakeWriter(LakeReader):
    """Writes the raw tables: validated rows in atomic commits, and the mark of a complete batch."""

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the lake's writers' lock (one machine's processes): writers that share a lake
        (the followers of several chains) commit a batch and its mark one at a time. Released
        when the holder ends, however it ends."""
        path = (Path(self.root) / ".writers.lock" if not self.remote else
                home() / "locks" / f"{hashlib.sha256(self.root.encode()).hexdigest()[:16]}.lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(held, fcntl.LOCK_UN)

    def write(self, table: str, frame: pl.DataFrame) -> int:
        """Validate `frame` and replace every partition it covers, in one commit; returns the
        table's new version. Writing the same rows again leaves the same rows."""
        spec, data = self._validated(table, frame)
        if data.is_empty():
            existing = self.version(table)
            if existing is not None:
                return existing
            return self._commit(table, spec, data, "append", None)
        return self._commit(table, spec, data, "overwrite", covering(spec, data))

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
            stored = stored.with_columns(date=date_expr(spec))
        if parts:
            touched = stored.filter(selected).select(parts).unique().collect()
            covered = pl.concat([touched, data.select(parts)]).unique()
            if covered.is_empty():
                return int(self.version(table) or 0)
            stored = stored.join(covered.lazy(), on=parts, how="semi")
        kept = stored.filter(~selected).collect()
        rows = pl.concat([kept, data], how="vertical_relaxed").sort(list(spec.key))
        return self._commit(table, spec, rows, "overwrite",
                            covering(spec, covered) if parts else None)

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

    def drop(self, table: str) -> None:
        """Remove a whole table, before a producer rewrites all of it."""
        spec_of(table)
        self._forget(table)
        self._remove(table)

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

    def _validated(self, table: str, frame: pl.DataFrame) -> tuple[LakeTable, pl.DataFrame]:
        spec = spec_of(table)
        try:
            spec.model.validate(frame, lazy=True)
        except pa.errors.SchemaErrors as err:
            raise LakeError(f"{table}: {err.failure_cases.head(5)}") from err
        data = frame.select(list(spec.model.to_schema().columns)).sort(list(spec.key))
        if spec.partitioning in ("date", "chain_date"):
            data = data.with_columns(date=date_expr(spec))
        return spec, data

    def _commit(self, table: str, spec: LakeTable, data: pl.DataFrame,
                mode: Literal["append", "overwrite"], predicate: str | None) -> int:
        partitions = spec.partition_columns() or None
        rows = one_batch(data)

        def write(target: str | DeltaTable) -> None:
            # "merge": a column the contract gained since the table was made is added to it.
            evolving: Literal["merge"] | None = "merge" if spec.added else None
            # The properties are a new table's; an existing one's are set by the maintenance.
            if mode == "append":
                write_deltalake(target, rows, partition_by=partitions, mode="append",
                                schema_mode=evolving, storage_options=self.delta.options(),
                                writer_properties=writer_properties(),
                                configuration=LOG_PROPERTIES)
            else:
                write_deltalake(target, rows, partition_by=partitions, mode="overwrite",
                                predicate=predicate, schema_mode=evolving,
                                storage_options=self.delta.options(),
                                writer_properties=writer_properties(),
                                configuration=LOG_PROPERTIES)

        def attempt() -> None:
            held = None if self._open is None else self.latest(table)
            write(self.uri(table) if held is None else held)

        committed([attempt] * COMMIT_TRIES)
        written = self.latest(table)
        if written is None:
            raise LakeError(f"{table}: committed, then not found at {self.uri(table)}")
        return int(written.version())

    def _remove(self, table: str) -> None:
        self.objects.remove(table)
