"""One schedule per cadence; each refreshes its products and publishes a snapshot."""

import dagster as dg

CADENCES = {
    "every_5_minutes": ("*/5 * * * *", ["market", "chains", "oracle", "publish"]),
}


def schedules() -> tuple[list, list[dg.ScheduleDefinition]]:
    """The cadence jobs and their schedules (stopped until switched on in the UI)."""
    jobs, scheds = [], []
    for name, (cron, groups) in CADENCES.items():
        job = dg.define_asset_job(f"refresh_{name}",
                                  selection=dg.AssetSelection.groups(*groups))
        jobs.append(job)
        scheds.append(dg.ScheduleDefinition(job=job, cron_schedule=cron,
                                            execution_timezone="UTC"))
    return jobs, scheds
