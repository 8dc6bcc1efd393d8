"""Chain records in their wire shape (spec 2.9), as pre-rendered JSON items."""

import orjson
import polars as pl

_MOVER = ("pair_address", "ticker", "value")


def chain_items(records: pl.DataFrame) -> pl.DataFrame:
    """Index columns plus `item`, the record's JSON with gainer and loser as objects."""
    items = []
    for row in records.iter_rows(named=True):
        record = {k: v for k, v in row.items() if not k.startswith(("gainer_", "loser_"))}
        for side in ("gainer", "loser"):
            mover = {f: row[f"{side}_{f}"] for f in _MOVER}
            record[side] = mover if mover["pair_address"] is not None else None
        items.append(orjson.dumps(record).decode())
    return records.select("chain_id", "slug").with_columns(item=pl.Series(items, dtype=pl.String))


def config_document(records: pl.DataFrame, config: pl.DataFrame) -> dict:
    """/config: every chain record and the value lists a valid request may use."""
    lists = config.row(0, named=True)
    chains = [orjson.loads(item) for item in chain_items(records)["item"]]
    return {"chains": chains, **lists}
