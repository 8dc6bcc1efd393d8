"""The lake's days as Dagster partitions: what is made a day at a time is partitioned by them,
and a refresh asks for the days the lake changed."""

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

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
    a result per product, with the rows written counted. A day's frames are written on a
    thread of their own while the next day is made (at most one day behind): a day is made
    from what the day before left in memory, not from what was written. When making a day
    fails, the days before it are written whole first."""
    rows: dict[str, int] = {}
    versions: dict[str, int] = {}
    days = sorted(context.partition_keys)

    def written(name: str, frame: pl.DataFrame | pl.LazyFrame, day: str) -> None:
        versions[name] = warehouse.write(name, frame, day)
        rows[name] = rows.get(name, 0) + warehouse.product_days(name, [day]).select(
            pl.len()).collect().item()

    with ThreadPoolExecutor(1) as writing:
        writes: list[Future[None]] = []
        for day in days:
            frames = made(day)
            for write in writes:
                write.result()
            writes = [writing.submit(written, name, frame, day)
                      for name, frame in frames.items()]
            del frames
        for write in writes:
            write.result()
    for name, count in rows.items():
        context.log.info(f"{name} of {len(days)} day(s): {count} rows")
    return [dg.MaterializeResult(asset_key=product_key(name), metadata={
        "dagster/row_count": count, "delta_version": versions[name], "days": ", ".join(days)})
        for name, count in rows.items()]
