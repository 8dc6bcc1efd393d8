"""The one Definitions object: lake specs, assets by domain, blocking checks, jobs, schedules."""

import dagster as dg

from assets.boards import assets as boards_assets
from assets.chains import assets as chains_assets
from assets.checks import product_checks
from assets.farms import assets as farms_assets
from assets.market import assets as market_assets
from assets.oracle import assets as oracle_assets
from assets.perps import assets as perps_assets
from assets.snapshot import assets as snapshot_assets
from assets.sql_assets import lake_specs, sql_assets
from assets.wallets import assets as wallets_assets
from pipelines.progress import step_lines
from pipelines.resources import executor, resources
from pipelines.schedules import (
    lake_maintenance,
    lake_sensor,
    maintenance_schedule,
    rankings,
    refresh_job,
    schedules,
)

python_assets = [a for a in dg.load_assets_from_modules([
    market_assets, chains_assets, wallets_assets, boards_assets, farms_assets, perps_assets,
    oracle_assets, snapshot_assets]) if isinstance(a, dg.AssetsDefinition)]
model_assets = sql_assets()
# Checks a product's own step runs as it is made are carried by its asset already.
carried = {check for a in [*python_assets, *model_assets] for check in a.check_keys}

# In one process, two steps at once on threads by default: a step per process would cost each
# of the thirty-odd steps an interpreter and the imports, several times the work of most of
# them. One at a time, or on Celery workers, by configuration (docs/pipeline.md, deploy.md).
everything = dg.define_asset_job("everything", selection=dg.AssetSelection.all(),
                                 executor_def=executor())
refresh = refresh_job(executor())
ranking_job, ranking_schedule = rankings()
cadence_jobs, cadence_schedules = schedules()

defs = dg.Definitions(
    assets=[*lake_specs(), *python_assets, *model_assets],
    asset_checks=product_checks(carried),
    jobs=[everything, refresh, ranking_job, *cadence_jobs, lake_maintenance],
    schedules=[*cadence_schedules, ranking_schedule, maintenance_schedule],
    sensors=[lake_sensor(refresh.name)],
    resources=resources(),
    loggers={"console": dg.colored_console_logger, "step_lines": step_lines},
)


def job_named(name: str) -> dg.JobDefinition:
    """The job named `name`, as a process executing a run or a step of it loads it again."""
    return defs.resolve_job_def(name)
