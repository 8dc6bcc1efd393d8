"""The warehouse as the batch's Dagster resource: the tables of `assets.tables`, each read
checked against the reading step's deps, and a product's materialisation reported."""

import dagster as dg
import polars as pl

from assets.domains import PIN, PRODUCTS, key, product_key
from assets.tables import Tables
from sources.lake import TABLES


class Warehouse(dg.ConfigurableResource, Tables):
    """The raw lake plus the materialised products, addressed by table name; inside an asset's
    step, only a table the asset depends on (or its own product) may be read."""

    lake_root: str
    root: str

    def reading(self, name: str) -> None:
        """Refuse a read the running step's deps do not name (`_depended_on`)."""
        _depended_on(name)


def _depended_on(name: str) -> None:
    try:
        step = dg.AssetExecutionContext.get()
    except dg.DagsterInvariantViolationError:
        return  # not an asset's step: a check, a test or a bench reads what it likes
    if name not in TABLES and name not in PRODUCTS:
        return  # no asset's: a product's own record of its previous state
    definition = step.assets_def
    wanted = key(name)
    # Its own products: those it makes, and those its checks read when run without them.
    own = definition.keys | {check.asset_key for check in definition.check_keys}
    if wanted not in definition.dependency_keys and wanted not in own:
        raise dg.Failure(f"{step.op_def.name} reads {name!r} but does not depend on "
                         f"{wanted.to_user_string()}: add it to the asset's deps")
    pin = product_key(PIN)
    if name in TABLES and pin not in definition.dependency_keys and pin not in own:
        raise dg.Failure(f"{step.op_def.name} reads the lake's {name!r} but does not depend on "
                         f"{pin.to_user_string()}, which pins the lake its run reads")


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
    version = warehouse.write(name, frame)
    if isinstance(frame, pl.LazyFrame):
        frame = warehouse.scan(name)
        height, frame = frame.select(pl.len()).collect().item(), frame.head(5).collect()
    else:
        height = frame.height
    return dg.MaterializeResult(asset_key=key, metadata={
        "dagster/row_count": height, "delta_version": version,
        "preview": dg.MetadataValue.md(preview(frame)),
    })
