"""Delta tables under one root, a directory or an s3:// prefix: where each lives, how it is
opened (at a version or its newest) and how its files are scanned. The lake's raw tables and
the warehouse's products are both such roots."""

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from core.caches import LruCache
from core.store import is_remote, polars_options, storage_options

# A commit's file in a table's log: its version, 20 digits.
_COMMIT = re.compile(r"^(\d{20})\.json$")
# Tables opened at a version for reading, kept for the process: a run opens the same few dozen
# tables at the same versions hundreds of times (657 opens, 9.7 s of its steps' 31.7 s, in
# one refresh at 1M), and opening one replays its log. Bounded by count: a table's state is
# its live files' actions, at most a few MB for the lake's largest.
_READ: LruCache[DeltaTable] = LruCache(48)
_READ_LOCK = threading.Lock()


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
        if not self.remote:
            return self.latest_version(name) is not None
        return DeltaTable.is_deltatable(self.uri(name), storage_options=self.options())

    def open(self, name: str, version: int | None = None) -> DeltaTable | None:
        """A table at `version` (else its newest); None when it is absent."""
        try:
            return DeltaTable(self.uri(name), version=version, storage_options=self.options())
        except TableNotFoundError:
            return None

    def read(self, name: str, version: int) -> DeltaTable | None:
        """A table at `version` for reading only (never written through, nor moved to another
        version), opened once for the process while it is among the most recently read; None
        when absent. A table removed and made again is told apart by its commit's time, in a
        directory (on S3 no process may do so while another reads it)."""
        key = (self.uri(name), version, self.committed_at(name, version))
        with _READ_LOCK:
            found = _READ.get(key)
        if found is None:
            found = self.open(name, version)
            if found is None:
                return None
            with _READ_LOCK:
                _READ.put(key, found)
        return found

    def latest_version(self, name: str) -> int | None:
        """A table's newest version from its log's listing, in a directory, without opening
        it (None on S3, or when the table is absent)."""
        if self.remote:
            return None
        try:
            names = os.listdir(f"{self.uri(name)}/_delta_log")
        except FileNotFoundError:
            return None
        versions = [int(m[1]) for n in names if (m := _COMMIT.match(n))]
        return max(versions, default=None)

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
