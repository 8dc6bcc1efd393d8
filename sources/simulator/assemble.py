"""Turns one chain's buffered events and entities into lake tables with blocks and hashes."""

from datetime import UTC, datetime

import numpy as np
import polars as pl
import pyarrow as pa

from core.columns import RAW
from sources.simulator import ids
from sources.simulator.events import EventColumns
from sources.simulator.world import ChainWorld

RAW_COLUMNS = {"amount0_in", "amount1_in", "amount0_out", "amount1_out", "reserve0", "reserve1",
               "amount0", "amount1", "liquidity", "amount", "tx_fee_raw", "staked_raw",
               "reward_per_second_raw", "total_supply_raw", "max_supply_raw",
               "circulating_supply_raw"}
HEAD_EVERY_S = 60


class Clock:
    """Maps unix time to a chain's block numbers and block times."""

    def __init__(self, world: ChainWorld) -> None:
        self.start = world.start.timestamp()
        self.block_s = world.template.block_time_ms / 1000.0
        self.base = int(1_100 * 86_400 / self.block_s) + 1_000_000

    def block(self, t: np.ndarray | float) -> np.ndarray:
        """The block containing time `t`."""
        return (self.base + np.floor((np.asarray(t) - self.start) / self.block_s)).astype(np.int64)

    def time(self, block: np.ndarray) -> np.ndarray:
        """The timestamp of each block, in unix seconds."""
        return self.start + (np.asarray(block) - self.base) * self.block_s

    def at(self, block: int) -> float:
        """The timestamp of one block, in unix seconds."""
        return self.start + (block - self.base) * self.block_s


def raw_series(name: str, values) -> pl.Series:
    """Integer raw amounts as decimal(38,0), never through floats."""
    array = pa.array([None if v is None else int(v) for v in values], type=pa.decimal128(38, 0))
    return pl.Series(name, array)


def to_frame(columns: dict[str, list]) -> pl.DataFrame:
    """A frame from buffered columns, raw amounts as decimals."""
    series = []
    for name, values in columns.items():
        if name in RAW_COLUMNS:
            series.append(raw_series(name, values))
        else:
            series.append(pl.Series(name, values, strict=False))
    return pl.DataFrame(series)


def with_utc(frame: pl.DataFrame, *names: str) -> pl.DataFrame:
    """Unix-second float columns as UTC microsecond timestamps."""
    return frame.with_columns(
        (pl.col(n) * 1_000_000).round().cast(pl.Int64).cast(pl.Datetime("us")).dt
        .replace_time_zone("UTC").alias(n) for n in names
    )


def placed(world: ChainWorld, frames: dict[str, pl.DataFrame], clock: Clock,
           rng: np.random.Generator) -> dict[str, pl.DataFrame]:
    """Event frames (every event of their blocks) with block_number, log_index, block_time and
    tx_hash filled in: logs numbered in each block by time, transaction and position, a hash
    drawn for each transaction."""
    fmt = world.template.address_format
    order = pl.concat([
        f.select("t", "tx", "sub").with_columns(table=pl.lit(name), row=pl.int_range(pl.len()))
        for name, f in frames.items()
    ])
    order = order.with_columns(block_number=pl.Series(clock.block(order["t"].to_numpy())))
    order = order.sort("block_number", "t", "tx", "sub").with_columns(
        log_index=pl.int_range(pl.len()).over("block_number"))
    txs = np.unique(order["tx"].to_numpy())
    hashes = ids.tx_hashes(fmt, rng, len(txs))
    out = {}
    for name, frame in frames.items():
        where = order.filter(pl.col("table") == name).sort("row")
        frame = frame.with_columns(
            block_number=where["block_number"], log_index=where["log_index"].cast(pl.Int64),
            block_time=pl.Series(clock.time(where["block_number"].to_numpy())),
            tx_hash=pl.Series(hashes[np.searchsorted(txs, frame["tx"].to_numpy())]),
        )
        out[name] = with_utc(frame, "block_time")
    return out


def lake_rows(world: ChainWorld, frames: dict[str, pl.DataFrame], clock: Clock,
              rng: np.random.Generator,
              venue_of: dict[str, tuple[str, str]]) -> dict[str, pl.DataFrame]:
    """Event frames (every event of their blocks) as the lake's rows: placed in blocks, swaps
    given their sender, gas and fee, the buffer's own columns dropped, and the blocks table."""
    tables = placed(world, frames, clock, rng)
    if "swaps" in tables:
        tables["swaps"] = swap_details(tables["swaps"], world, venue_of, rng)
    if "ownership" in tables:
        tables["ownership"] = tables["ownership"].with_columns(source=pl.lit("event"))
    tables = {name: frame.drop("t", "tx", "sub") for name, frame in tables.items()}
    tables["blocks"] = blocks_table(tables)
    return tables


def frames_of(events: EventColumns) -> dict[str, pl.DataFrame]:
    """The buffered events of each table as a frame."""
    return {name: to_frame(cols) for name, cols in events.columns.items() if cols["t"]}


def blocks_table(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Blocks holding at least one indexed event, with their log counts."""
    return (pl.concat([f.select("block_number", "block_time") for f in tables.values()])
            .group_by("block_number", "block_time").agg(log_count=pl.len().cast(pl.Int64))
            .sort("block_number"))


def heads_table(world: ChainWorld, clock: Clock, observed: np.ndarray) -> pl.DataFrame:
    """Indexer vs chain head at each of `observed`: a lagging chain trails, a stopped one
    freezes where it stopped."""
    lag = {"lagging": 240.0, "stopped": 0.0}.get(world.role, 2 * clock.block_s + 1.0)
    until = world.indexed_until.timestamp() if world.role == "stopped" else np.inf
    indexed_t = np.minimum(observed - lag, until)
    head, indexed = clock.block(observed), clock.block(indexed_t)
    frame = pl.DataFrame({
        "observed_at": observed, "indexed_block": indexed,
        "indexed_block_time": clock.time(indexed), "head_block": head,
        "head_block_time": clock.time(head),
    })
    return with_utc(frame, "observed_at", "indexed_block_time", "head_block_time")


def grid(world: ChainWorld, since: float, until: float, every: float) -> np.ndarray:
    """The instants in [since, until) on the chain's grid of period `every` (seconds from the
    history's start): when heads, perp snapshots and farm observations are taken."""
    start = world.start.timestamp()
    first = start + every * max(0, -(-(since - start) // every))
    return np.arange(first, until, every)


def swap_details(swaps: pl.DataFrame, world: ChainWorld, pools_venue: dict[str, tuple[str, str]],
                 rng: np.random.Generator) -> pl.DataFrame:
    """Router as sender (an aggregator's for some swaps), gas used and the receipt fee."""
    n = swaps.height
    aggregator = next(v for v in world.venues if v.category == "aggregator").router
    routers = swaps["pair"].replace_strict({k: v[0] for k, v in pools_venue.items()})
    via_aggregator = rng.random(n) < 0.12
    fmt = world.template.address_format
    if fmt == "base58":
        gas = rng.integers(60_000, 400_000, n)
        fee = 5_000 + gas * rng.integers(0, 50, n) // 1_000
    else:
        gas = rng.integers(90_000, 260_000, n)
        price = rng.lognormal(np.log(3e9 if fmt == "evm" else 750), 0.6, n).astype(np.int64)
        fee = gas * price
    fee_known = np.full(n, fmt != "base58check")
    return swaps.with_columns(
        sender=pl.when(pl.Series(via_aggregator)).then(pl.lit(aggregator)).otherwise(routers),
        gas_used=pl.Series(gas.astype(np.int64)),
        tx_fee_raw=pl.when(pl.Series(fee_known)).then(pl.Series(fee.astype(np.int64)))
        .otherwise(None).cast(RAW),
    )


def stamp(frame: pl.DataFrame, chain_id: int) -> pl.DataFrame:
    """Adds the chain id column."""
    return frame.with_columns(chain_id=pl.lit(chain_id, pl.Int64))


def utc(t: float) -> datetime:
    """Unix seconds as an aware datetime."""
    return datetime.fromtimestamp(t, tz=UTC)

