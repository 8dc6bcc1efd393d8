"""The lake's tables: each raw table's pandera model, partitioning, date column and sort key,
and the expressions that place its rows in partitions."""

from dataclasses import dataclass
from typing import Literal

import pandera.polars as pa
import polars as pl

from sources import contract as schema


class LakeError(ValueError):
    """A write that breaks the lake contract."""


Partitioning = Literal["none", "chain", "date", "chain_date"]


@dataclass(frozen=True)
class LakeTable:
    """A raw table: its pandera model, partitioning, date column and sort key."""

    model: type[pa.DataFrameModel]
    partitioning: Partitioning
    key: tuple[str, ...]
    date_column: str | None = None
    # Columns the contract gained after the table's first rows, with the value every row
    # written before holds (None: null): an older lake reads as the newer contract says.
    added: tuple[tuple[str, str | None], ...] = ()

    def partition_columns(self) -> list[str]:
        """The Delta partition columns, in path order."""
        return {"none": [], "chain": ["chain_id"], "date": ["date"],
                "chain_date": ["chain_id", "date"]}[self.partitioning]


_EVENT_KEY = ("chain_id", "block_number", "log_index")


TABLES: dict[str, LakeTable] = {
    "chains": LakeTable(schema.Chain, "none", ("chain_id",)),
    "venues": LakeTable(schema.Venue, "chain", ("chain_id", "factory")),
    "heads": LakeTable(schema.Head, "chain_date", ("chain_id", "observed_at"), "observed_at"),
    "blocks": LakeTable(schema.Block, "chain_date", ("chain_id", "block_number"), "block_time"),
    # Every token before tokens said their owner-only powers: none read.
    "tokens": LakeTable(schema.Token, "chain", ("chain_id", "address"),
                        added=(("owner_powers", None),)),
    "token_registry": LakeTable(schema.TokenRegistryEntry, "none", ("token_id",)),
    "token_instances": LakeTable(schema.TokenInstance, "none", ("token_id", "chain_id")),
    "token_profiles": LakeTable(schema.TokenProfile, "chain", ("chain_id", "address")),
    # Every pair before pairs said a curve's graduation: not known.
    "pairs": LakeTable(schema.Pair, "chain", ("chain_id", "address"),
                       added=(("graduation_quote_raw", None),)),
    "swaps": LakeTable(schema.Swap, "chain_date", _EVENT_KEY, "block_time"),
    "liquidity_events": LakeTable(schema.LiquidityEvent, "chain_date", _EVENT_KEY, "block_time"),
    "reserves": LakeTable(schema.Reserve, "chain_date", _EVENT_KEY, "block_time"),
    "transfers": LakeTable(schema.Transfer, "chain_date", _EVENT_KEY, "block_time"),
    "ownership": LakeTable(schema.Ownership, "chain_date",
                           ("chain_id", "token", "block_number", "log_index"), "block_time"),
    "token_taxes": LakeTable(schema.TokenTax, "chain_date",
                             ("chain_id", "token", "side", "block_number", "log_index"),
                             "block_time"),
    "honeypot_tests": LakeTable(schema.HoneypotTest, "chain_date",
                                ("chain_id", "token", "block_number"), "block_time"),
    "lp_locks": LakeTable(schema.LpLock, "chain", ("chain_id", "tx_hash")),
    "address_labels": LakeTable(schema.AddressLabel, "chain", ("chain_id", "address", "kind")),
    "farm_pools": LakeTable(
        schema.FarmObservation,
        "chain_date",
        ("chain_id", "farm_address", "pid", "observed_at"),
        "observed_at",
    ),
    "perp_markets": LakeTable(schema.PerpMarket, "chain", ("chain_id", "market")),
    "perp_snapshots": LakeTable(
        schema.PerpSnapshot, "chain_date", ("chain_id", "market", "observed_at"), "observed_at"
    ),
    "liquidations": LakeTable(schema.Liquidation, "chain_date", _EVENT_KEY, "block_time"),
    "liquidation_heartbeats": LakeTable(
        schema.LiquidationHeartbeat, "chain_date", ("chain_id", "observed_at"), "observed_at"
    ),
    # Every feed before feeds said their source was the simulator's.
    "oracle_feeds": LakeTable(schema.OracleFeed, "none", ("feed_id",),
                              added=(("source", "simulator"),)),
    # Every update before updates said their source was the simulator's.
    "oracle_updates": LakeTable(
        schema.OracleUpdate, "date", ("feed_id", "publish_time"), "publish_time",
        added=(("source", "simulator"),),
    ),
}


def spec_of(table: str) -> LakeTable:
    try:
        return TABLES[table]
    except KeyError:
        raise LakeError(f"unknown lake table {table!r}; known: {', '.join(TABLES)}") from None


def date_expr(spec: LakeTable) -> pl.Expr:
    if spec.date_column is None:
        raise LakeError(f"{spec.model.__name__} is partitioned by date but names no date column")
    column = pl.col(spec.date_column)
    if spec.date_column == "publish_time":
        column = pl.from_epoch(column, time_unit="s")
    return column.dt.date().cast(pl.String)


def literal(value: object) -> str:
    return str(value) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"


def covering(spec: LakeTable, data: pl.DataFrame) -> str | None:
    """The predicate naming exactly the partitions `data` covers (None: the whole table)."""
    columns = spec.partition_columns()
    if not columns:
        return None
    combos = data.select(columns).unique().sort(columns).rows()
    return " OR ".join("(" + " AND ".join(f"{c} = {literal(v)}" for c, v in
                                          zip(columns, combo, strict=True)) + ")"
                       for combo in combos)


def lake_schema(table: str) -> dict[str, pl.DataType]:
    """A raw table's columns and their polars types, as the contract fixes them."""
    return polars_schema(spec_of(table).model)


def table_frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """Rows of a lake table as a frame of its schema (empty when there are none)."""
    return pl.DataFrame(rows, schema=lake_schema(table), orient="row") if rows else \
        pl.DataFrame(schema=lake_schema(table))


def polars_schema(model: type[pa.DataFrameModel]) -> dict[str, pl.DataType]:
    return {name: column.dtype.type for name, column in model.to_schema().columns.items()}
