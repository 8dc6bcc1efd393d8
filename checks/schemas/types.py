"""Column types shared by the pandera models of the lake and the products."""

import pandera.polars as pa
import polars as pl
from pandera.engines import polars_engine as pe

UTC_TS = pl.Datetime("us", "UTC")
RAW = pl.Decimal(38, 0)
STRINGS = pl.List(pl.String)

Timestamp = pe.DateTime
Raw = pe.Decimal
Strings = pe.List


def ts(**kw) -> object:
    """A UTC microsecond timestamp column."""
    return pa.Field(dtype_kwargs={"time_zone": "UTC", "time_unit": "us"}, **kw)


def raw(**kw) -> object:
    """An integer raw on-chain amount (decimal(38,0), never a float)."""
    return pa.Field(dtype_kwargs={"precision": 38, "scale": 0}, **kw)


def strings(**kw) -> object:
    """A list-of-strings column."""
    return pa.Field(dtype_kwargs={"inner": pl.String}, **kw)


# An event key packs into one 128-bit integer when its parts fit these bits: the chain id the
# top 64, the block the next 44, the log index the last 20.
_BLOCK_BITS, _LOG_BITS = 44, 20


def events_unique(frame: pl.LazyFrame) -> bool | pl.LazyFrame:
    """True when no two rows share an event (chain_id, block_number, log_index); else which
    rows do. Rows in chain order prove it in one pass: each chain in one run whose keys only
    rise. Otherwise ten million keys are counted as one packed integer each, a fraction of the
    cost of comparing rows of three columns, which is left for the rows of a failing frame."""
    new_chain = pl.col("chain_id").diff().fill_null(1) != 0
    rising = (pl.col("block_number").diff() > 0) | (
        (pl.col("block_number").diff() == 0) & (pl.col("log_index").diff() > 0))
    bounds = frame.select(
        low=pl.min_horizontal(pl.col("chain_id", "block_number", "log_index").min()),
        block=pl.col("block_number").max(), log=pl.col("log_index").max(),
        rows=pl.len(), runs=new_chain.sum(), chains=pl.col("chain_id").n_unique(),
        ordered=(new_chain | rising).all()).collect().row(0, named=True)
    if bounds["rows"] == 0 or (bounds["ordered"] and bounds["runs"] == bounds["chains"]):
        return True
    if bounds["low"] >= 0 and bounds["block"] < 2**_BLOCK_BITS and bounds["log"] < 2**_LOG_BITS:
        packed = (pl.col("chain_id").cast(pl.Int128) * 2**(_BLOCK_BITS + _LOG_BITS)
                  + pl.col("block_number").cast(pl.Int128) * 2**_LOG_BITS
                  + pl.col("log_index"))
        if frame.select(packed.n_unique()).collect().item() == bounds["rows"]:
            return True
    return frame.select(~pl.struct("chain_id", "block_number", "log_index").is_duplicated())
