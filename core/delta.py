"""Delta tables under one root, a directory or an s3:// prefix: where each lives, how it is
opened (at a version or its newest) and how its files are scanned. The lake's raw tables and
the warehouse's products are both such roots."""

import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from core.store import is_remote, polars_options, storage_options


@dataclass(frozen=True)
class DeltaRoot:
    """A root of Delta tables addressed by name, with the S3 settings it is read with."""

    root: str
    remote: bool
    storage: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def at(root: Path | str) -> "DeltaRoot":
        """The root as given: an s3:// prefix (read with the environment's S3 settings) or a
        directory (made absolute)."""
        root = str(root)
        if is_remote(root):
            return DeltaRoot(root.rstrip("/"), True, storage_options())
        return DeltaRoot(str(Path(root).absolute()), False)

    def uri(self, name: str) -> str:
        """Where a table's Delta log and files live."""
        return f"{self.root}/{name}"

    def options(self) -> dict[str, str] | None:
        """The S3 settings as delta-rs takes them (None for a directory)."""
        return self.storage or None

    def exists(self, name: str) -> bool:
        """Whether a table has been written."""
        return DeltaTable.is_deltatable(self.uri(name), storage_options=self.options())

    def open(self, name: str, version: int | None = None) -> DeltaTable | None:
        """A table at `version` (else its newest); None when it is absent."""
        try:
            return DeltaTable(self.uri(name), version=version, storage_options=self.options())
        except TableNotFoundError:
            return None

    def polars_options(self) -> dict[str, str] | None:
        """The S3 settings as polars' readers take them (None for a directory)."""
        return polars_options(self.storage) or None

    def committed_at(self, name: str, version: int) -> int | None:
        """When a table's commit of `version` was written, in a directory (None on S3, or
        gone): a table removed and made again has new commits under the same versions."""
        if self.remote:
            return None
        try:
            return os.stat(f"{self.uri(name)}/_delta_log/{version:020d}.json").st_mtime_ns
        except FileNotFoundError:
            return None


def add_actions(delta: DeltaTable) -> pl.DataFrame:
    """A table's live files as its log names them: path, size, partition values, statistics."""
    return pl.DataFrame(delta.get_add_actions(flatten=True))
