"""The lake's days as Dagster partitions: what is made a day at a time is partitioned by them,
and a refresh asks for the days the lake changed."""

from collections.abc import Callable, Mapping

import dagster as dg
import polars as pl

from assets.domains import product_key
from assets.warehouse import Warehouse

# One key per UTC date (YYYY-MM-DD) the lake holds swaps of, added as the lake reaches it.
NAME = "days"
DAYS = dg.DynamicPartitionsDefinition(name=NAME)
# Run tags that name a range of partitions for one run (Dagster's own).
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def run_tags(instance: dg.DagsterInstance, days: list[str]) -> dict[str, str]:
    """Tags for one run over `days` and every later day: new days become partitions first.
    A day's rows start where the earlier days' end, so the days after a changed one are made
    again too."""
    known = instance.get_dynamic_partitions(NAME)
    fresh = sorted(set(days) - set(known))
    if fresh:
        instance.add_dynamic_partitions(NAME, fresh)
        known = [*known, *fresh]
    # Keys in the order they were added, which is the days' order as the lake reaches them.
    first = min(days)
    return {RANGE_START: next(k for k in known if k >= first), RANGE_END: known[-1]}



def made_by_day(context: dg.AssetExecutionContext, warehouse: Warehouse,
                made: Callable[[str], Mapping[str, pl.DataFrame | pl.LazyFrame]]
                ) -> list[dg.MaterializeResult]:
    """Products made a day at a time: each of the run's days made (`made`: each product's
    frame of the day, by name), in order, and written alone, one commit per product and day;
    a result per product, with the rows written counted."""
    rows: dict[str, int] = {}
    versions: dict[str, int] = {}
    days = sorted(context.partition_keys)
    for day in days:
        for name, frame in made(day).items():
            versions[name] = warehouse.write(name, frame, day)
            rows[name] = rows.get(name, 0) + warehouse.product_days(name, [day]).select(
                pl.len()).collect().item()
    for name, count in rows.items():
        context.log.info(f"{name} of {len(days)} day(s): {count} rows")
    return [dg.MaterializeResult(asset_key=product_key(name), metadata={
        "dagster/row_count": count, "delta_version": versions[name], "days": ", ".join(days)})
        for name, count in rows.items()]
