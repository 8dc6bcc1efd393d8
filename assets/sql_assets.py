"""Turns every SQL model into a Dagster asset whose dependencies come from its lineage."""

import dagster as dg

from assets.sql_models import SqlModel, load_models
from assets.warehouse import Warehouse, materialized
from sources.lake import TABLES


def lake_specs() -> list[dg.AssetSpec]:
    """The raw lake tables, as external assets written by sources/."""
    return [dg.AssetSpec(["lake", name], group_name="lake",
                         description=TABLES[name].model.__doc__ or f"raw table {name}")
            for name in TABLES]


def sql_assets(python_keys: dict[str, dg.AssetKey]) -> list[dg.AssetsDefinition]:
    """One asset per model; `python_keys` names the polars assets a model may read."""
    models = load_models()
    keys = {name: dg.AssetKey(["lake", name]) for name in TABLES}
    keys.update(python_keys)
    keys.update({m.name: dg.AssetKey([m.domain, m.name]) for m in models.values()})
    return [_sql_asset(model, keys) for model in models.values()]


def _sql_asset(model: SqlModel, keys: dict[str, dg.AssetKey]) -> dg.AssetsDefinition:
    unknown = [t for t in model.tables if t not in keys]
    if unknown:
        raise ValueError(f"{model.path}: reads unknown tables {', '.join(unknown)}")

    @dg.asset(name=model.name, key_prefix=model.domain, group_name=model.domain,
              deps=[keys[t] for t in model.tables], description=model.description,
              metadata={"grain": model.grain, "sql_path": str(model.path)},
              kinds={"sql", "polars"})
    def _model(warehouse: Warehouse) -> dg.MaterializeResult:
        watermark = warehouse.clock()["as_of"] if "as_of" in model.tables else None
        return materialized(warehouse, model.name,
                            model.run(warehouse.frames(model.tables), watermark))

    return _model
