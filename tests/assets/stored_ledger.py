"""A ledger at hand as the publish reads a stored one: a lake day at a time, each day's rows
in a file named by its rows (as a write never reuses a file's name)."""

import polars as pl

from assets.snapshot.wallet_tables import StoredLedger
from publish.spans import DAY_SECONDS, fingerprint


def stored_ledger(ledger: pl.DataFrame, cut_s: int) -> StoredLedger:
    """`ledger`'s rows by the UTC day of their `ts`, cut at `cut_s`; a ledger without rows is
    one day's file without rows."""
    files: dict[str, pl.DataFrame] = {}
    days: dict[int, list[str]] = {}
    split = (ledger.with_columns(_day=pl.col("ts") // DAY_SECONDS * DAY_SECONDS)
             .partition_by("_day", as_dict=True, maintain_order=True))
    for (day,), rows in sorted(split.items()) or [((cut_s // DAY_SECONDS * DAY_SECONDS,),
                                                    ledger.with_columns(_day=pl.lit(0)))]:
        name = f"{day}:{fingerprint(rows)}"
        files[name], days[int(day)] = rows.drop("_day"), [name]
    return StoredLedger(days, lambda names: pl.concat([files[n] for n in names]).lazy(), cut_s)
