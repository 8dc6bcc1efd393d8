"""The lake's days as Dagster partitions: what is made a day at a time is partitioned by them,
and a refresh asks for the days the lake changed."""

import dagster as dg

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

