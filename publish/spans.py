"""Spans: how a serving table's rows are cut into parts by time (closed days, the hours of
the watermark's day), so that a part whose rows did not change is shared between snapshots."""

import hashlib
from collections.abc import Iterator
from datetime import date
from typing import Any

import numpy as np
import polars as pl

DAY_SECONDS = 86_400
HOUR_SECONDS = 3_600
# Where a day's last hour starts, from the day's first second.
LAST_HOUR = DAY_SECONDS - HOUR_SECONDS
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def day_of(ts: str = "ts") -> pl.Expr:
    """The UTC day (days since the epoch) of a column of unix seconds."""
    return pl.col(ts) // DAY_SECONDS


def span_of(as_of_s: int, ts: str | pl.Expr = "ts", closing_hour: bool = False) -> pl.Expr:
    """A serving table's span for rows that only ever arrive at the end of time, labelled by
    its first second: the watermark's hour for a row in it (or later, or with no time yet: a
    round still open), else the row's UTC day. A refresh adds to the watermark's hour, so the
    rest of its day keeps its part. `closing_hour`: a closed day's last hour is a span of its
    own too, so that the day's turn, which adds to that hour, leaves the rest of the day the
    part it had at 23:00."""
    hour = _hour_of(as_of_s)
    at = pl.col(ts) if isinstance(ts, str) else ts
    day = at // DAY_SECONDS * DAY_SECONDS
    label = pl.when(at.is_null() | (at >= hour)).then(pl.lit(hour, pl.Int64))
    if closing_hour:
        return label.when(at >= day + LAST_HOUR).then(day + LAST_HOUR).otherwise(day)
    return label.otherwise(day)


def span_cut(as_of_s: int, lag_s: int) -> int:
    """The instant a serving table's spans and layers are cut at (what `span_of` and
    `spans_in_day` take): the watermark less the most a live chain lags behind it, whose
    rows still arrive in the hour before the watermark's, but not before the watermark's day,
    so that a span never crosses a day."""
    return max(as_of_s - max(lag_s, 0), span_day(as_of_s))


def spans_in_day(day: int, as_of_s: int, closing_hour: bool = False) -> list[int]:
    """The span labels `span_of` gives the rows of the day starting at second `day`: the day,
    and the watermark's hour when it falls within the day (or, `closing_hour`, the day's last
    hour when the day is closed)."""
    hour = _hour_of(as_of_s)
    if day < hour < day + DAY_SECONDS:
        return [day, hour]
    return [day, day + LAST_HOUR] if closing_hour and hour >= day + DAY_SECONDS else [day]


def span_end(label: int, cut_s: int, closing_hour: bool = False) -> int | None:
    """The first second after the span labelled `label` by `span_of` at `cut_s` (with its
    `closing_hour`): its day's end (or its last hour's start), or the cut's hour's start for
    the rest of the cut's day (None for the cut's hour: it runs on)."""
    hour = _hour_of(cut_s)
    if label >= hour:
        return None
    if label % DAY_SECONDS:
        return label + HOUR_SECONDS
    return min(label + (LAST_HOUR if closing_hour else DAY_SECONDS), hour)


def span_day(label: int) -> int:
    """The first second of the UTC day a span labelled `label` by `span_of` falls in."""
    return label - label % DAY_SECONDS


def _hour_of(as_of_s: int) -> int:
    return as_of_s - as_of_s % HOUR_SECONDS


def day_start(day: str) -> int:
    """A UTC date (YYYY-MM-DD) as its first second, the label `span_of` gives a closed day."""
    return (date.fromisoformat(day).toordinal() - _EPOCH_ORDINAL) * DAY_SECONDS



def spans_of(frame: pl.DataFrame, span: pl.Expr) -> Iterator[tuple[Any, pl.DataFrame]]:
    """A frame's rows by the value of `span`, in span order, each span's rows in their order;
    a frame without rows is one unlabelled piece without rows, which carries the columns."""
    if frame.is_empty():
        yield None, frame
        return
    split = frame.with_columns(_span=span).partition_by("_span", as_dict=True)
    for (label,) in sorted(split):
        yield label, split.pop((label,)).drop("_span")


def span_names(frame: pl.DataFrame, span: pl.Expr, *made_with: str) -> dict[Any, str]:
    """A name for each span's rows of `frame` (in order, with the schema) and for `made_with`
    (what else every span's rows are made from): a changed row changes its span's name only.
    Like `fingerprint`, the polars release is part of it."""
    labels = frame.select(span.alias("_span"))["_span"].to_numpy()
    hashes = frame.hash_rows(seed=0x5EED).to_numpy()
    order = np.argsort(labels, kind="stable")
    labels, hashes = labels[order], hashes[order]
    if not len(labels):
        return {}
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    ends = [*starts[1:], len(labels)]
    head = f"{pl.__version__}|{frame.schema}|{'|'.join(made_with)}".encode()
    return {labels[a].item(): hashlib.sha256(head + hashes[a:b].tobytes()).hexdigest()[:40]
            for a, b in zip(starts, ends, strict=True)}


def fingerprint_of(*names: str) -> str:
    """One name for several names, in order."""
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:40]


def files_named(*paths: str) -> str:
    """One name for data files, in order, by their own names (a write never reuses one), not
    where they are: a lake or warehouse moved or restored under another path keeps its names,
    and a publish there makes nothing again."""
    return fingerprint_of(*(path.rsplit("/", 1)[-1] for path in paths))


def fingerprint(frame: pl.DataFrame) -> str:
    """A name for a frame's rows, in order, with its schema: equal frames get equal names, and
    frames that differ in any value differ in it but for a collision of 64-bit row hashes.
    Polars' row hash is stable within one release only, so the release is part of the name:
    a new one writes new parts rather than share old ones."""
    digest = hashlib.sha256(f"{pl.__version__}|{frame.schema}|{frame.height}".encode())
    digest.update(frame.hash_rows(seed=0x5EED).to_numpy().tobytes())
    return digest.hexdigest()[:40]
