"""The raw lake: Delta Lake tables, validated on write, appended and replaced in atomic commits.
Its tables (`tables`), reads (`LakeReader`), writes (`LakeWriter`, a reader that also writes)
and upkeep (`LakeMaintenance`, over a lake) are modules of their own."""

from core.progress import PROGRESS, Progress, default_root
from sources.lake.maintenance import COMPACT_ABOVE_FILES, RETENTION, LakeMaintenance
from sources.lake.reader import LakeReader
from sources.lake.tables import TABLES, LakeError, LakeTable, lake_schema, table_frame
from sources.lake.writer import LakeWriter, committed

__all__ = ["COMPACT_ABOVE_FILES", "PROGRESS", "RETENTION", "TABLES", "LakeError",
           "LakeMaintenance", "LakeReader", "LakeTable", "LakeWriter", "Progress", "committed",
           "default_root", "lake_schema", "table_frame"]
