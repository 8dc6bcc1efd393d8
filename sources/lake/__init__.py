"""The raw lake: Delta Lake tables, validated on write, appended and replaced in atomic commits.
Its tables (`tables`), reads (`reader`), writes (`writer`) and upkeep (`maintenance`) are modules
of their own; `Lake` is all of them over one root."""

from sources.lake.maintenance import COMPACT_ABOVE_FILES, RETENTION, LakeMaintenance
from sources.lake.reader import (
    PROGRESS,
    LakeReader,
    Progress,
    default_root,
    is_remote,
    polars_options,
    storage_options,
)
from sources.lake.tables import TABLES, LakeError, LakeTable, lake_schema, table_frame
from sources.lake.writer import LakeWriter, committed


class Lake(LakeWriter, LakeMaintenance):
    """Reads, writes and keeps the raw tables under one root (a directory or an s3:// prefix);
    see `LakeReader` for what opening one with `versions` or `keep_open` means."""


__all__ = ["COMPACT_ABOVE_FILES", "PROGRESS", "RETENTION", "TABLES", "Lake", "LakeError",
           "LakeReader", "LakeTable", "LakeWriter", "Progress", "committed", "default_root",
           "is_remote", "lake_schema", "polars_options", "storage_options", "table_frame"]
