"""The lake's days as Dagster partitions: what is made a day at a time is partitioned by them,
and a refresh asks for the days the lake changed."""

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

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



@dataclass(frozen=True)
class Segment:
    """The hours of a lake day made at once, written as one file of each product: from `hour`
    up to `until` (None: the day's end). The day's first (hour 0) takes, as the day does,
    what the day reads from before its date."""

    day: str
    hour: int
    until: int | None = None

    @property
    def start(self) -> datetime:
        """The segment's first instant."""
        return datetime.fromisoformat(self.day).replace(tzinfo=UTC) + timedelta(hours=self.hour)

    def rows(self, frame: pl.LazyFrame, column: str = "block_time") -> pl.LazyFrame:
        """`frame`'s rows of the segment, by their time (`column`)."""
        if self.hour > 0:
            frame = frame.filter(pl.col(column) >= self.start)
        if self.until is not None:
            end = self.start + timedelta(hours=self.until - self.hour)
            frame = frame.filter(pl.col(column) < end)
        return frame


def segments(warehouse: Warehouse, names: list[str], days: list[str],
             tables: tuple[str, ...], carried: bool = False
             ) -> Iterator[tuple[Segment, bool]]:
    """The segments a run of `days` makes of the products `names`, in order, each with whether
    it ends its day: each day from the hour its new rows begin in (`from_hour`), or when a
    day is made from the books the day before left (`carried`), the first day so and every
    other whole; the watermark's day cut at the watermark's hour, so that the next refresh
    begins at a file of its own, and a day before it at its last hour (where a chain that
    trails the clock still writes after midnight)."""
    watermark = _watermark(warehouse)
    # The watermark's day (without a watermark, the legs made alone: the lake's last).
    today = (f"{watermark:%Y-%m-%d}" if watermark is not None
             else max(warehouse.lake().days_made("swaps"), default=""))
    records = {name: warehouse.made_record(name) for name in names}
    for number, day in enumerate(days):
        hour = from_hour(warehouse, records, day, tables) if number == 0 or not carried else 0
        cut = 23 if day < today else None
        if day == today and watermark is not None:
            cut = watermark.hour
        if cut is not None and cut > hour:
            yield Segment(day, hour, cut), False
            yield Segment(day, cut), True
        else:
            yield Segment(day, hour), True


def from_hour(warehouse: Warehouse, records: Mapping[str, dict[str, Any] | None], day: str,
              tables: tuple[str, ...]) -> int:
    """The first hour of `day` the products `records` names (each with its `made_record`) are
    made again from: the hour of the earliest of their last making's watermark (the hour it
    was in is made again; a closed day's last file) and the rows of `tables` the lake holds
    and it did not, rounded down to an hour each product's files begin at. The whole day (0)
    when a product's making of this day was not kept (an older one, or one that did not
    finish)."""
    made = [(record or {}).get("days", {}).get(day) for record in records.values()]
    days = [kept for kept in made if kept is not None and kept["through"]]
    if len(days) < len(records):
        return 0
    lake = warehouse.lake()
    instants = [datetime.fromisoformat(kept["through"]) for kept in days]
    read = {(table, kept["lake"].get(table)) for kept in days for table in tables}
    for table, version in read:
        new = lake.earliest_new(table, version, warehouse.day_dates(table, day))
        if new is not None:
            instants.append(new)
    since = min(instants) - datetime.fromisoformat(day).replace(tzinfo=UTC)
    if since < timedelta(0):
        return 0
    hour = min(int(since.total_seconds() // 3600), 23)
    begins = set.intersection(*(set(warehouse.hours(name, day)) for name in records))
    return max((h for h in begins if h <= hour), default=0)


# The days whose making a product's record keeps: a chain that trails the clock still writes
# the day before's rows for a while after midnight.
KEPT_DAYS = 3


def making(warehouse: Warehouse, before: dict[str, Any] | None, day: str) -> dict[str, Any]:
    """What a day's making keeps with a product's last file of it (`Tables.write`), beside
    what the product's record `before` kept of the days before: the lake versions it read and
    the watermark it was made up to (None before the watermark is made: the legs made alone,
    which the next making makes whole)."""
    watermark = _watermark(warehouse)
    kept = dict((before or {}).get("days", {}))
    kept[day] = {"lake": warehouse.lake().versions or {},
                 "through": watermark.isoformat() if watermark is not None else None}
    return {"days": {d: kept[d] for d in sorted(kept)[-KEPT_DAYS:]}}


def _watermark(warehouse: Warehouse) -> datetime | None:
    return warehouse.clock()["as_of"] if warehouse.exists("as_of") else None


def made_by_day(context: dg.AssetExecutionContext, warehouse: Warehouse,
                run: list[tuple[Segment, bool]],
                made: Callable[[Segment], Mapping[str, pl.DataFrame | pl.LazyFrame]]
                ) -> list[dg.MaterializeResult]:
    """Products made a day at a time, a day in segments of hours (`run`, from `segments`: a
    refresh makes its first day again from the hour its new rows begin in): each segment made
    (`made`: each product's frame, by name), in order, and written alone, one commit per
    product and segment; a result per product, with the rows of its days counted. A segment's
    frames are written on a thread of their own while the next is made (at most one behind):
    a segment is made from what the one before left in memory, not from what was written.
    When making one fails, those before it are written first."""
    rows: dict[str, int] = {}
    versions: dict[str, int] = {}
    days = sorted(context.partition_keys)

    # Each product's record as its last write left it: a write with none (a day's first
    # segments) leaves none.
    records: dict[str, dict[str, Any] | None] = {}

    def written(name: str, frame: pl.DataFrame | pl.LazyFrame, segment: Segment,
                last: bool) -> None:
        if name not in records:
            records[name] = warehouse.made_record(name)
        records[name] = making(warehouse, records[name], segment.day) if last else None
        versions[name] = warehouse.write(name, frame, segment.day, segment.hour, records[name])
        if last:
            rows[name] = rows.get(name, 0) + warehouse.product_days(
                name, [segment.day]).select(pl.len()).collect().item()

    with ThreadPoolExecutor(1) as writing:
        writes: list[Future[None]] = []
        for segment, last in run:
            context.log.info(f"{segment.day} from {segment.hour:02d}:00"
                             + (f" to {segment.until:02d}:00" if segment.until else ""))
            frames = made(segment)
            for write in writes:
                write.result()
            writes = [writing.submit(written, name, frame, segment, last)
                      for name, frame in frames.items()]
            del frames
        for write in writes:
            write.result()
    for name, count in rows.items():
        context.log.info(f"{name} of {len(days)} day(s): {count} rows")
    return [dg.MaterializeResult(asset_key=product_key(name), metadata={
        "dagster/row_count": count, "delta_version": versions[name], "days": ", ".join(days)})
        for name, count in rows.items()]
