"""The raw lake: hive-partitioned Parquet tables, validated on write, replaced idempotently."""

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandera.polars as pa
import polars as pl

from core.home import home
from sources import contract as schema

Partitioning = Literal["none", "chain", "date", "chain_date"]


@dataclass(frozen=True)
class LakeTable:
    """A raw table: its pandera model, directory layout, date column and sort key."""

    model: type[pa.DataFrameModel]
    partitioning: Partitioning
    key: tuple[str, ...]
    date_column: str | None = None


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

PART_FILE = "part-0.parquet"
# A small table spread over many daily files (a week's liquidity events are a few thousand rows
# in over a thousand files) costs more to open than to hold: tables up to this size on disk are
# read once per process, by path, and read again only when a file of theirs changes.
KEPT_BYTES = 32 * 2**20
_KEPT: dict[Path, tuple[tuple, pl.DataFrame]] = {}


def default_root() -> Path:
    """The lake directory: $CHAINTAPE_LAKE, else $CHAINTAPE_HOME/lake, else ./var/lake."""
    if os.environ.get("CHAINTAPE_LAKE"):
        return Path(os.environ["CHAINTAPE_LAKE"])
    return home() / "lake"


class LakeError(ValueError):
    """A write that breaks the lake contract."""


class Lake:
    """Reads and writes the raw tables under one root directory."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()

    def write(self, table: str, frame: pl.DataFrame) -> list[Path]:
        """Validate `frame` and replace each partition it covers; returns the files written."""
        spec = _spec(table)
        try:
            spec.model.validate(frame, lazy=True)
        except pa.errors.SchemaErrors as err:
            raise LakeError(f"{table}: {err.failure_cases.head(5)}") from err
        frame = frame.sort(list(spec.key))
        written = []
        for directory, part in self._partitions(table, spec, frame):
            written.append(_replace_partition(directory, part))
        return written

    def scan(self, table: str) -> pl.LazyFrame:
        """All partitions of a table as one lazy frame (empty with its schema when absent). A
        table of at most KEPT_BYTES on disk is read once per process and kept while none of its
        files changes."""
        spec = _spec(table)
        files = self.files(table)
        if not files:
            return pl.LazyFrame(schema=_polars_schema(spec.model))
        stamp = tuple((f, st.st_size, st.st_mtime_ns) for f in files for st in (f.stat(),))
        if sum(size for _, size, _ in stamp) > KEPT_BYTES:
            return pl.scan_parquet(files, hive_partitioning=False)
        kept = _KEPT.get(self.root / table)
        if kept is None or kept[0] != stamp:
            kept = _KEPT[self.root / table] = (
                stamp, pl.scan_parquet(files, hive_partitioning=False).collect())
        return kept[1].lazy()

    def read(self, table: str) -> pl.DataFrame:
        """A whole table, materialised."""
        return self.scan(table).collect()

    def files(self, table: str) -> list[Path]:
        """The table's partition files, in path order."""
        return sorted((self.root / table).glob(f"**/{PART_FILE}"))

    def drop(self, table: str) -> None:
        """Remove a whole table, before a producer rewrites all of it."""
        _spec(table)
        shutil.rmtree(self.root / table, ignore_errors=True)

    def tables(self) -> list[str]:
        """The tables that have at least one partition."""
        return [name for name in TABLES if self.files(name)]

    def _partitions(self, table: str, spec: LakeTable, frame: pl.DataFrame):
        base = self.root / table
        keys: list[str] = []
        if spec.partitioning in ("chain", "chain_date"):
            keys.append("chain_id")
        if spec.partitioning in ("date", "chain_date"):
            frame = frame.with_columns(_date_expr(spec).alias("_date"))
            keys.append("_date")
        if not keys:
            yield base, frame
            return
        for values, part in frame.group_by(keys, maintain_order=True):
            names = dict(zip(keys, values, strict=True))
            directory = base
            if "chain_id" in names:
                directory = directory / f"chain_id={names['chain_id']}"
            if "_date" in names:
                directory = directory / f"date={names['_date']}"
            yield directory, part.drop("_date", strict=False)


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


def _replace_partition(directory: Path, part: pl.DataFrame) -> Path:
    """Write a partition beside its final name and rename over it, dropping stale files."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / PART_FILE
    tmp = directory / f".{PART_FILE}.tmp-{os.getpid()}"
    part.write_parquet(tmp, compression="zstd", statistics=True)
    os.replace(tmp, target)
    for stale in directory.iterdir():
        if stale.name != PART_FILE:
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink()
    return target


def _polars_schema(model: type[pa.DataFrameModel]) -> dict[str, pl.DataType]:
    return {name: column.dtype.type for name, column in model.to_schema().columns.items()}
