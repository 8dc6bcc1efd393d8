"""Turns every SQL model into a Dagster asset whose dependencies come from its lineage."""

from typing import Any

import dagster as dg

from assets.checks import product_asset
from assets.domains import PRODUCTS, keys
from assets.sql_models import SqlModel, load_models
from assets.warehouse import Warehouse, materialized
from checks.products import PRODUCT_SCHEMAS
from sources.lake import TABLES


def lake_specs() -> list[dg.AssetSpec]:
    """The raw lake tables, as external assets written by sources/."""
    return [dg.AssetSpec(["lake", name], group_name="lake",
                         description=TABLES[name].model.__doc__ or f"raw table {name}")
            for name in TABLES]


def sql_assets() -> list[dg.AssetsDefinition]:
    """One asset per model, depending on the tables its query reads."""
    return [_sql_asset(model) for model in load_models().values()]


def _sql_asset(model: SqlModel) -> dg.AssetsDefinition:
    unknown = [t for t in model.tables if t not in TABLES and t not in PRODUCTS]
    if unknown:
        raise ValueError(f"{model.path}: reads unknown tables {', '.join(unknown)}")

    def _model(warehouse: Warehouse) -> dg.MaterializeResult:
        return materialized(warehouse, model.name, model.run(warehouse.frames(model.tables)))

    spec: dict[str, Any] = {"description": model.description, "kinds": {"sql", "polars"},
                            "metadata": {"grain": model.grain, "sql_path": str(model.path)}}
    if model.name in PRODUCT_SCHEMAS:
        return product_asset(deps=keys(*model.tables), name=model.name, **spec)(_model)
    return dg.asset(name=model.name, key_prefix=model.domain, group_name=model.domain,
                    deps=keys(*model.tables), **spec)(_model)
