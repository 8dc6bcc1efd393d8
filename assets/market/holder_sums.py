"""The holder changes of every lake day but the last, summed once and kept (`holder_sums`, the
holder balances' own record): a refresh adds the last day's changes to them instead of every
day's, and sums the days again only when one of them changed (the day turned, or a backfill)."""

import hashlib

import polars as pl

from assets.market.holders import summed
from assets.warehouse import Warehouse

NAME = "holder_sums"


def holder_changes(warehouse: Warehouse) -> pl.LazyFrame:
    """Every day's holder changes, the days before the last as their kept sums: the same
    balances when summed again. The sums are named by the files of the days they add up (a
    write never reuses a file's name), and made again when the name changes."""
    files = warehouse.day_files("holder_changes")
    *before, last = files
    if not before:
        return warehouse.read(files[last])
    closed = [path for day in before for path in files[day]]
    name = hashlib.sha256("\n".join(closed).encode()).hexdigest()[:32]
    if not _kept(warehouse, name):
        warehouse.write(NAME, summed(warehouse.read(closed)).with_columns(made_from=pl.lit(name)))
    kept = warehouse.scan(NAME).drop("made_from")
    return pl.concat([kept, warehouse.read(files[last]).select(kept.collect_schema().names())])


def _kept(warehouse: Warehouse, name: str) -> bool:
    if not warehouse.exists(NAME):
        return False
    found = warehouse.scan(NAME).select("made_from").head(1).collect()
    return found.height == 1 and found.item() == name
