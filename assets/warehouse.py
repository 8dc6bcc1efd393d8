"""Where assets read the lake and read and write their products (Parquet under one root)."""

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
from polars.io.plugins import register_io_source

from assets.domains import key
from core.home import home
from sources.lake import TABLES, Lake

# The week's largest products, which others read back in full (every swap as a leg, every
# wallet's ledger, positions and rounds): stored uncompressed, they are read back faster and
# written with less CPU, for a fifth to a quarter more disk. The rest, which lz4 shrinks by half
# or more, use it.
UNCOMPRESSED = frozenset({"swap_legs", "wallet_ledger", "wallet_positions", "wallet_rounds"})
# Read back only in full, never filtered: the statistics a filtered read skips row groups by
# would cost the ledger's write a sixth of its time and serve no reader.
WITHOUT_STATISTICS = frozenset({"wallet_ledger"})


# Products made a lake day at a time (Dagster's `days` partitions), a file per day, by the lake
# table whose days they follow; read back as one table, the days in order.
BY_DAY = {"swap_legs": "swaps"}

# The lake versions each warehouse's `as_of` product pinned, by the product's modification time.
_PINNED: dict[Path, tuple[int, dict[str, int]]] = {}


def parquet_options(name: str) -> dict:
    """How a product's Parquet file is written: its compression, and whether with statistics."""
    return {"compression": "uncompressed" if name in UNCOMPRESSED else "lz4",
            "statistics": name not in WITHOUT_STATISTICS}


def default_root() -> Path:
    """$CHAINTAPE_WAREHOUSE, else $CHAINTAPE_HOME/warehouse, else ./var/warehouse."""
    if os.environ.get("CHAINTAPE_WAREHOUSE"):
        return Path(os.environ["CHAINTAPE_WAREHOUSE"])
    return home() / "warehouse"


class Warehouse(dg.ConfigurableResource):
    """The raw lake plus the materialised products, addressed by table name."""

    lake_root: str
    root: str

    def lake(self) -> Lake:
        """The raw lake as this run reads it: at the versions the `as_of` product pinned (the
        lake's last complete batch when the run began), so every product of a run sees the same
        lake however much a live writer adds meanwhile."""
        path = self.path("as_of")
        try:
            stamp = path.stat().st_mtime_ns
        except FileNotFoundError:
            return self.pin()
        # Read once per `as_of` product, not once per scan of a lake table.
        if _PINNED.get(path, (None,))[0] != stamp:
            versions = pl.read_parquet(path, columns=["lake_versions"]).item()
            _PINNED[path] = (stamp, json.loads(versions))
        return Lake(self.lake_root, _PINNED[path][1])

    def pin(self) -> Lake:
        """The raw lake at its last complete batch, for the asset that pins a run's lake."""
        return Lake(self.lake_root).pinned()

    def path(self, name: str, day: str | None = None) -> Path:
        """The Parquet file of a product, or of its day."""
        if day is not None:
            return Path(self.root) / name / f"{day}.parquet"
        return Path(self.root) / f"{name}.parquet"

    def scan(self, name: str) -> pl.LazyFrame:
        """A raw table or a product, lazily. Inside an asset's step, only a table the asset
        depends on (or its own product): an asset's deps are what it reads, so a read its deps
        do not name fails its step rather than run out of order."""
        _depended_on(name)
        if name in TABLES:
            return self.lake().scan(name)
        if name in BY_DAY:
            return self._days(name)
        path = self.path(name)
        if not path.exists():
            raise FileNotFoundError(f"product {name!r} is not materialised yet ({path})")
        return pl.scan_parquet(path)

    def scan_day(self, name: str, day: str) -> pl.LazyFrame:
        """A raw table's rows of one day (YYYY-MM-DD)."""
        _depended_on(name)
        return self.lake().scan(name, day)

    def _days(self, name: str) -> pl.LazyFrame:
        """A product made a day at a time: the files of the days its lake table holds, in
        order; a day not made yet fails the read rather than leave its rows out."""
        days = self.lake().days(BY_DAY[name])
        missing = [day for day in days if not self.path(name, day).exists()]
        if missing:
            raise FileNotFoundError(
                f"product {name!r} is not materialised for {', '.join(missing)}: materialise "
                "those partitions (a backfill in the UI, or `chaintape materialize`)")
        if not days:
            raise FileNotFoundError(f"product {name!r} has no days: the lake's "
                                    f"{BY_DAY[name]} table is empty")
        return pl.scan_parquet([self.path(name, day) for day in days])

    def clock(self) -> dict:
        """The `as_of` product's one row: the watermark and the instants derived from it."""
        return self.scan("as_of").collect().row(0, named=True)

    def frames(self, names: tuple[str, ...]) -> dict[str, pl.LazyFrame]:
        """Several tables by name, for a SQL model's lineage."""
        return {name: self.scan(name) for name in names}

    def write(self, name: str, frame: pl.DataFrame | pl.LazyFrame, day: str | None = None) -> Path:
        """Replace a product's file (or its day's) atomically; a lazy frame streams into it,
        computed and written batch by batch. A failed write leaves the previous file and
        nothing else."""
        path = self.path(name, day)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A directory of its own: a sink that fails can still open its file after reporting the
        # failure, which then cannot land once the directory is gone.
        writing = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=path.parent))
        tmp = writing / "product"
        try:
            if isinstance(frame, pl.LazyFrame):
                frame.sink_parquet(tmp, **parquet_options(name))
            else:
                frame.write_parquet(tmp, **parquet_options(name))
            os.replace(tmp, path)
        finally:
            _remove(writing)
        return path


def _depended_on(name: str) -> None:
    try:
        step = dg.AssetExecutionContext.get()
    except dg.DagsterInvariantViolationError:
        return  # not an asset's step: a check, a test or a bench reads what it likes
    definition = step.assets_def
    wanted = key(name)
    # Its own products: those it makes, and those its checks read when run without them.
    own = definition.keys | {check.asset_key for check in definition.check_keys}
    if wanted not in definition.dependency_keys and wanted not in own:
        raise dg.Failure(f"{step.op_def.name} reads {name!r} but does not depend on "
                         f"{wanted.to_user_string()}: add it to the asset's deps")


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


def preview(frame: pl.DataFrame, rows: int = 5) -> str:
    """The first rows as a Markdown table, for the asset's page in the UI."""
    head = frame.head(rows)
    lines = ["| " + " | ".join(head.columns) + " |", "|" + "---|" * len(head.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in head.iter_rows()]
    return "\n".join(lines)


def materialized(warehouse: Warehouse, name: str, frame: pl.DataFrame | pl.LazyFrame,
                 key: dg.AssetKey | None = None) -> dg.MaterializeResult:
    """Store a product and report its row count and a preview (under `key`, one of the assets
    a multi-asset makes)."""
    path = warehouse.write(name, frame)
    if isinstance(frame, pl.LazyFrame):
        frame = pl.scan_parquet(path)
        height, frame = frame.select(pl.len()).collect().item(), frame.head(5).collect()
    else:
        height = frame.height
    return dg.MaterializeResult(asset_key=key, metadata={
        "dagster/row_count": height,
        "preview": dg.MetadataValue.md(preview(frame)),
    })
