"""Keeping the lake: crowded partitions compacted into one file in key order, and files no
retained version reads vacuumed."""

import contextlib
from datetime import timedelta
from typing import Any

import polars as pl
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from core.delta import add_actions
from sources.lake.reader import LakeReader
from sources.lake.tables import LakeTable, date_expr, literal, spec_of
from sources.lake.writer import LOG_PROPERTIES, one_batch, writer_properties

# Versions older than this stay readable (a run pins the versions it started on); vacuum removes
# only files no version inside the window needs.
RETENTION = timedelta(hours=2)


# A partition with more files than this is rewritten as one by the maintenance job.
COMPACT_ABOVE_FILES = 8


class LakeMaintenance:
    """Compacts and vacuums the raw tables of a lake."""

    def __init__(self, lake: LakeReader) -> None:
        self.lake = lake

    def compact(self, table: str, tries: int = 3) -> int:
        """Rewrite each partition holding more than COMPACT_ABOVE_FILES files as one file in key
        order; returns the partitions rewritten. Each is its own commit against the version it
        read: a writer appending to the same partition meanwhile makes it fail, and it is tried
        again (then left for the next run), so no appended row is ever lost."""
        spec = spec_of(table)
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
        delta = self.lake.latest(table)
        if delta is None:
            return []
        actions = add_actions(delta)
        parts = [c for c in actions.columns if c.startswith("partition.")]
        if not parts:
            return [{}] if actions.height > COMPACT_ABOVE_FILES else []
        counts = actions.group_by(parts).len().filter(pl.col("len") > COMPACT_ABOVE_FILES)
        return [{k.removeprefix("partition."): v for k, v in row.items()}
                for row in counts.drop("len").to_dicts()]

    def _compact(self, table: str, spec: LakeTable, names: dict[str, Any]) -> None:
        delta = DeltaTable(self.lake.uri(table), storage_options=self.lake.delta.options())
        data = LakeReader(self.lake.root, {table: delta.version()}).scan(table)
        if "chain_id" in names:
            data = data.filter(pl.col("chain_id") == names["chain_id"])
        if "date" in names:
            data = data.filter(date_expr(spec) == names["date"])
        frame = data.collect()
        if spec.partitioning in ("date", "chain_date"):
            frame = frame.with_columns(date=date_expr(spec))
        predicate = " AND ".join(f"{k} = {literal(v)}" for k, v in names.items()) or None
        write_deltalake(delta, one_batch(frame.sort(list(spec.key))),
                        partition_by=spec.partition_columns() or None, mode="overwrite",
                        predicate=predicate, storage_options=self.lake.delta.options(),
                        writer_properties=writer_properties(), commit_properties=CommitProperties(
                            custom_metadata={"chaintape": "compact"}))

    def vacuum(self, table: str, retention: timedelta = RETENTION) -> list[str]:
        """Delete the files no version younger than `retention` reads, and the log entries
        before the last checkpoint past the table's log retention (LOG_PROPERTIES, set first
        on a table made before it had them); returns the files deleted."""
        delta = self.lake.latest(table)
        if delta is None:
            return []
        configured = delta.metadata().configuration
        if any(configured.get(k) != v for k, v in LOG_PROPERTIES.items()):
            # A writer's commit meanwhile makes this one fail: it is set at the next run.
            with contextlib.suppress(CommitFailedError):
                delta.alter.set_table_properties(LOG_PROPERTIES)
            delta = self.lake.latest(table) or delta
        deleted = delta.vacuum(retention_hours=max(0, int(retention.total_seconds() // 3600)),
                               dry_run=False, enforce_retention_duration=False)
        delta.create_checkpoint()
        delta.cleanup_metadata()
        return deleted
