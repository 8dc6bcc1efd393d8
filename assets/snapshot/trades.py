"""The pair trades' serving table: a part per chain of each span (`span_of` with each closed day's
last hour apart), each named by the rows it is made from, so that a span none of them changed
for keeps the previous snapshot's part, across the day's turn too."""

import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import polars as pl

from assets.warehouse import Warehouse
from core.columns import EVENT
from core.fingerprints import recipe
from figures import pair_trades
from figures.pair_trades import trade_rows
from publish.spans import (
    DAY_SECONDS,
    day_of,
    day_start,
    files_named,
    fingerprint,
    fingerprint_of,
    span_day,
    span_end,
    span_names,
    span_of,
    spans_in_day,
    spans_of,
)
from publish.writer import SpannedTable
from sources.lake import LakeReader

# Where the names of the closed days' spans are kept, by what each day is read from.
NAMES = "trade_span_names"
# What the trades take from the lake's swaps.
SWAP_COLUMNS = (*EVENT, "tx_hash", "maker", "sender", "recipient")


class DaySwaps:
    """The lake's swaps a UTC day at a time (by its first second): each day's files, listed
    once, and its rows as the trades take them (`rows`, their time in unix seconds, `ts`; of
    one chain when asked), the last day read kept, so the watermark's day, named for the
    wallet trades and then for the trades, is read once, and no more than a day is held."""

    def __init__(self, lake: LakeReader) -> None:
        self.lake = lake
        listed = lake.day_files("swaps")
        self.files = {day_start(day): files for day, files in listed.items()}
        self._days = {day_start(day): day for day in listed}
        self._last: tuple[tuple[int, int | None], pl.DataFrame] | None = None

    def rows(self, day: int, chain: int | None = None) -> pl.DataFrame:
        """The day's swaps as the trades take them (of `chain` alone, when given: from the
        whole day when that is the last read, as the watermark's day is, named by its rows
        before it is made a chain at a time)."""
        if self._last is not None and self._last[0] == (day, None) and chain is not None:
            return self._last[1].filter(pl.col("chain_id") == chain)
        if self._last is None or self._last[0] != (day, chain):
            read = (self.lake.scan("swaps", self._days[day]) if day in self._days
                    else self.lake.scan("swaps").head(0))
            if chain is not None:
                read = read.filter(pl.col("chain_id") == chain)
            self._last = (day, chain), _taken(read).collect()
        return self._last[1]

    def covering(self, ts: pl.Series, chain: int | None = None) -> pl.LazyFrame:
        """The swaps of every lake day these instants (unix seconds) fall in (of `chain` alone,
        when given): where the swaps of a day's legs or ledger rows are found by their events,
        a day read, not the lake."""
        days = (ts // DAY_SECONDS * DAY_SECONDS).unique().sort().to_list()
        if not days:
            return _taken(self.lake.scan("swaps").head(0))
        return pl.concat([self.rows(day, chain).lazy() for day in days])


def _taken(swaps: pl.LazyFrame) -> pl.LazyFrame:
    """What the trades take of the lake's swaps, with their time in unix seconds (`ts`)."""
    return swaps.select(*SWAP_COLUMNS, ts=pl.col("block_time").dt.epoch("s"))


def trade_days(warehouse: Warehouse, as_of: datetime, cut_s: int, version: int,
               day_swaps: DaySwaps) -> SpannedTable:
    """The pair trades a UTC day at a time, and a day a chain at a time, in their spans
    (`span_of` at `cut_s`, the closing hour apart): each day's swap legs (at `version`) read
    alone, its liquidity trades (a few, some from long before the swaps) with them, the lake's
    swaps of the day (its files and rows: `day_swaps`) giving hashes and addresses. A span is
    named by its legs' rows, its liquidity trades', the lake's swaps', the watermark inside it
    and the code that makes it. A day's names are kept by what it is read from (the legs' and
    the swaps' files, a write never reusing a file's name, and its liquidity trades), and a
    closed day's rows are read to name it only when that changed and it was named by its rows
    before, as the watermark's day is: at the day's turn, when yesterday is made again whole
    and its first 23 hours come out as they were, only its last hour is made. A closed day
    never named by its rows (every day but the last two of a first publish, which makes them
    all) is named by what it is read from."""
    legs = {day_start(day): files for day, files in warehouse.files("swap_legs", version).items()
            if day is not None}
    # In a fixed order: the product's rows come in no particular one, and a day's name is of
    # its rows in order.
    liquidity = warehouse.scan("liquidity_trades").collect().sort(
        "chain_id", "pair", "block_number", "log_index")
    events = dict(spans_of(liquidity, day_of() * DAY_SECONDS))
    quiet = liquidity.clear()
    made_with = recipe(pair_trades, sys.modules[__name__])
    watermark = int(as_of.timestamp())
    today = span_day(cut_s)
    span = span_of(cut_s, closing_hour=True)

    def day_legs(day: int) -> pl.LazyFrame:
        return (warehouse.read(legs[day]) if day in legs
                else warehouse.scan("swap_legs", version).head(0))

    def read_names(day: int) -> dict[int, str]:
        """Each span of a day named by its rows."""
        of = [span_names(day_legs(day).collect(), span),
              span_names(events.get(day, quiet), span), span_names(day_swaps.rows(day), span)]
        return {label: fingerprint_of(*(names.get(label, "") for names in of))
                for label in spans_in_day(day, cut_s, closing_hour=True)}

    def inputs() -> dict[int, str]:
        known: dict[str, dict[str, Any]] = warehouse.recall(NAMES)
        by_rows = {entry["day"] for entry in known.values() if entry["by_rows"]}
        kept: dict[str, dict[str, Any]] = {}
        found = {}
        # The latest day first: the one whose swaps were read last.
        for day in sorted(legs.keys() | events.keys(), reverse=True):
            read_from = fingerprint_of(made_with, files_named(*legs.get(day, [])),
                                       files_named(*day_swaps.files.get(day, [])),
                                       fingerprint(events.get(day, quiet)))
            labels = spans_in_day(day, cut_s, closing_hour=True)
            entry = known.get(read_from) if day < today else None
            # Kept while the day was the watermark's, under that hour's spans: not a closed
            # day's.
            if entry is not None and set(entry["names"]) != {str(label) for label in labels}:
                entry = None
            if entry is None:
                # The day before the cut's still changes while a live chain lags behind its
                # end: named by its rows, its first 23 hours keep their part meanwhile.
                rows = day >= today - DAY_SECONDS or day in by_rows
                names = read_names(day) if rows else {
                    label: fingerprint_of(read_from, str(label)) for label in labels}
                entry = {"day": day, "by_rows": rows,
                         "names": {str(label): name for label, name in names.items()}}
            kept[read_from] = entry
            found.update({int(label): fingerprint_of(
                made_with, name,
                str(min(watermark, span_end(int(label), cut_s, closing_hour=True) or watermark)))
                for label, name in entry["names"].items()})
        if kept != known:
            warehouse.remember(NAMES, kept)
        return found

    def pieces(wanted: set[Any] | None) -> Iterator[tuple[int, pl.DataFrame]]:
        days = None if wanted is None else {span_day(label) for label in wanted}
        for day in sorted(legs.keys() | events.keys()):
            if days is not None and day not in days:
                continue
            day_events = events.get(day, quiet)
            read = day_legs(day)
            if wanted is not None:
                # Only the wanted spans' legs: at the turn, yesterday's last hour of them.
                read = read.filter(span_of(cut_s, pl.col("block_time").dt.epoch("s"),
                                           closing_hour=True).is_in(list(wanted)))
                day_events = day_events.filter(span.is_in(list(wanted)))
            # A chain at a time, so that what a publish holds follows a chain's day: a span's
            # parts come a chain after another, each sorted by the key that leads with it. The
            # day's legs and swaps are read once, whole (a chain's read would pass over the
            # others' rows), and each chain's trades made from its share of them.
            by_chain = read.collect().partition_by("chain_id", as_dict=True)
            day_swaps.rows(day)
            chains = {chain for (chain,) in by_chain} | set(day_events["chain_id"])
            for chain in sorted(chains) or [None]:
                of_chain = pl.lit(True) if chain is None else pl.col("chain_id") == chain
                legs_of = by_chain.pop((chain,), None)
                made = trade_rows(read.head(0).collect() if legs_of is None else legs_of,
                                  day_swaps.rows(day, chain).lazy(),
                                  day_events.filter(of_chain), as_of)
                yield from ((label, rows) for label, rows in spans_of(made, span)
                            if wanted is None or label in wanted)

    return SpannedTable("trades", pieces, ("chain_id", "pair", "block_number", "log_index"),
                        inputs)
