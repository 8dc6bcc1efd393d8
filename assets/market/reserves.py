"""Each pair's reserves at the watermark and at the instants before it, from each lake day's first
and last reserves (`reserve_days`) and the rows of the instant's own day: a refresh reads the
days its instants fall in, not every reserve since the first pool was funded."""

from collections.abc import Mapping
from datetime import UTC, datetime

import polars as pl

from assets.warehouse import Warehouse

NAME = "reserve_days"
KEY = ("chain_id", "pair")
SIDES = ("reserve0", "reserve1")


def reserve_day(rows: pl.LazyFrame, day: str) -> pl.LazyFrame:
    """A day of swaps' (or a segment of its hours') first and last reserves per pair, from
    its rows in chain order (`Warehouse.scan_day`); those before its date (`earlier`: of dates
    no swap was made on, and for the first day every reserve before it) are kept apart, ahead
    of the date's own."""
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return (rows.group_by(*KEY, earlier=pl.col("block_time") < start)
            .agg(*[pl.col(side).first().alias(f"{side}_first") for side in SIDES],
                 *[pl.col(side).last().alias(f"{side}_last") for side in SIDES])
            .sort(*KEY, pl.col("earlier").not_()))


def reserves_at(warehouse: Warehouse, cutoffs: Mapping[str, datetime]) -> pl.LazyFrame:
    """Per pair: each side's last reserve at or before every cutoff (`{side}_{name}`, null when
    there is none) and its first ever (`{side}_first`). A day's last is the last of the days
    before it, unless its own rows before the cutoff have one."""
    if "first" in cutoffs:
        raise ValueError("`first` names the first reserves, not a cutoff")
    days = warehouse.lake().days("swaps")
    # A few rows per pool and day: read once for every cutoff.
    summaries = {day: summary.collect() for day, summary in _summaries(warehouse, days).items()}
    found = None
    for name, at in cutoffs.items():
        last = _last_at(warehouse, summaries, at).rename({s: f"{s}_{name}" for s in SIDES})
        found = last if found is None else found.join(last, on=KEY, how="full", coalesce=True)
    # Before any day of swaps, the first reserves are the lake's own.
    firsts = (pl.concat([s.lazy() for s in summaries.values()]) if summaries
              else warehouse.scan("reserves").select(
                  *KEY, **{f"{side}_first": side for side in SIDES}))
    first = firsts.group_by(*KEY, maintain_order=True).agg(
        *[pl.col(f"{side}_first").first() for side in SIDES])
    return first if found is None else first.join(found, on=KEY, how="full", coalesce=True)


def day_closes(warehouse: Warehouse, until: datetime) -> pl.DataFrame:
    """Per pair and UTC date up to `until` (`day`): the date's last reserves, for a pair with
    reserves that date. A day of swaps before `until`'s date gives its own date's last
    (`reserve_days`); the rows of `until`'s date up to it, and of any date no swap was made
    on, are read."""
    cut = f"{until.astimezone(UTC):%Y-%m-%d}"
    lake = warehouse.lake()
    summarised = [day for day in lake.days("swaps") if day < cut]
    lasts = {side: f"{side}_last" for side in SIDES}
    summaries = [summary.filter(~pl.col("earlier")).select(
        *KEY, day=pl.lit(datetime.fromisoformat(day).date()), **lasts)
        for day, summary in _summaries(warehouse, summarised).items()]
    unsummarised = tuple(sorted({day for day in lake.days("reserves") if day <= cut}
                                - set(summarised)))
    rows = (lake.scan("reserves", unsummarised).filter(pl.col("block_time") <= until)
            .group_by(*KEY, day=pl.col("block_time").dt.date())
            .agg(pl.col(*SIDES).last()))
    # A day's summary holds a row per pair and segment of hours: its last is the day's.
    return (pl.concat([*summaries, rows.select(*KEY, "day", *SIDES)])
            .group_by(*KEY, "day", maintain_order=True).last().collect())


def _summaries(warehouse: Warehouse, days: list[str]) -> dict[str, pl.LazyFrame]:
    """The reserve days' summaries of `days`; a day not made fails, naming it."""
    made = warehouse.files(NAME) if days and warehouse.exists(NAME) else {}
    missing = [day for day in days if day not in made]
    if missing:
        raise FileNotFoundError(
            f"{NAME} of {', '.join(missing)} not materialised: materialise the market days "
            "from the first of them")
    return {day: warehouse.read(made[day]) for day in days}


def _last_at(warehouse: Warehouse, summaries: Mapping[str, pl.DataFrame],
             at: datetime) -> pl.LazyFrame:
    """Per pair with a reserve at or before `at`: its last. The days of swaps before the
    instant's date give their last (`summaries`, by day); then, on a day of swaps, that day's
    rows before its date (`earlier`) and its date's rows up to the instant; on a date no swap
    was made on, the rows of the dates since the last day of swaps."""
    date = at.astimezone(UTC).date().isoformat()
    if not summaries or date < min(summaries):
        # Before the first day of swaps: the first day's summary holds later rows too.
        rows = warehouse.scan("reserves").filter(pl.col("block_time") <= at)
        return rows.group_by(*KEY).agg(pl.col(*SIDES).last())
    parts = [summary for day, summary in summaries.items() if day < date]
    rows = warehouse.scan_day("reserves", date).filter(pl.col("block_time") <= at)
    if date in summaries:
        parts.append(summaries[date].filter("earlier"))
        rows = rows.filter(pl.col("block_time") >= datetime.fromisoformat(date).replace(tzinfo=UTC))
    stacked = pl.concat([
        *(part.lazy().select(*KEY, **{side: f"{side}_last" for side in SIDES})
          for part in parts),
        rows.select(*KEY, *SIDES)])
    return stacked.group_by(*KEY, maintain_order=True).agg(pl.col(*SIDES).last())
