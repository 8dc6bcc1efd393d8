"""Column types shared by the pandera models of the lake and the products."""

from typing import Any

import pandera.polars as pa
import polars as pl
from pandera.engines import polars_engine as pe

from core.fingerprints import keyed

UTC_TS = pl.Datetime("us", "UTC")
RAW = pl.Decimal(38, 0)
STRINGS = pl.List(pl.String)

Timestamp = pe.DateTime
Raw = pe.Decimal
Strings = pe.List


def ts(**kw: Any) -> Any:
    """A UTC microsecond timestamp column."""
    return pa.Field(dtype_kwargs={"time_zone": "UTC", "time_unit": "us"}, **kw)


def raw(**kw: Any) -> Any:
    """An integer raw on-chain amount (decimal(38,0), never a float)."""
    return pa.Field(dtype_kwargs={"precision": 38, "scale": 0}, **kw)


def strings(**kw: Any) -> Any:
    """A list-of-strings column."""
    return pa.Field(dtype_kwargs={"inner": pl.String}, **kw)


# An event key packs into one 128-bit integer when its parts fit these bits: the chain id the
# top 64, the block the next 44, the log index the last 20.
_BLOCK_BITS, _LOG_BITS = 44, 20
# What names one on-chain event: a trade, a transfer, a liquidity change.
EVENT = ("chain_id", "block_number", "log_index")


def _order_of(keys: tuple[str, ...]) -> dict[str, pl.Expr]:
    """What shows that rows come in key order: runs of the first key (a chain), and within a
    run the rest of the key strictly rising."""
    head, rest = keys[0], keys[1:]
    new_run = pl.col(head).diff().fill_null(1) != 0
    rising, tied = pl.lit(False), pl.lit(True)
    for key in rest:
        step = pl.col(key).diff()
        rising, tied = rising | (tied & (step > 0)), tied & (step == 0)
    return {"runs": new_run.sum(), "heads": pl.col(head).n_unique(),
            "ordered": (new_run | rising).all()}


def _proved(bounds: dict[str, Any]) -> bool:
    return bounds["rows"] == 0 or (bounds["ordered"] and bounds["runs"] == bounds["heads"])


def keys_unique(frame: pl.LazyFrame, keys: tuple[str, ...]) -> bool | pl.LazyFrame:
    """True when no two rows share `keys`; else which rows do. Rows in key order prove it in
    one pass: each value of the first key in one run, the rest of the key only rising in it."""
    if _proved(frame.select(rows=pl.len(), **_order_of(keys)).collect().row(0, named=True)):
        return True
    return frame.select(~pl.struct(*keys).is_duplicated())


def events_unique(frame: pl.LazyFrame) -> bool | pl.LazyFrame:
    """True when no two rows share an event (chain_id, block_number, log_index); else which
    rows do. Rows in chain order prove it in one pass (`keys_unique`). Otherwise ten million
    keys are counted as one packed integer each, a fraction of the cost of comparing rows of
    three columns, which is left for the rows of a failing frame."""
    bounds = frame.select(
        low=pl.min_horizontal(pl.col(*EVENT).min()),
        block=pl.col("block_number").max(), log=pl.col("log_index").max(),
        rows=pl.len(), **_order_of(EVENT)).collect().row(0, named=True)
    if _proved(bounds):
        return True
    if bounds["low"] >= 0 and bounds["block"] < 2**_BLOCK_BITS and bounds["log"] < 2**_LOG_BITS:
        packed = (pl.col("chain_id").cast(pl.Int128) * 2**(_BLOCK_BITS + _LOG_BITS)
                  + pl.col("block_number").cast(pl.Int128) * 2**_LOG_BITS
                  + pl.col("log_index"))
        if frame.select(packed.n_unique()).collect().item() == bounds["rows"]:
            return True
    return frame.select(~pl.struct(*EVENT).is_duplicated())


def fingerprints_unique(frame: pl.LazyFrame, keys: tuple[str, ...]) -> bool | pl.LazyFrame:
    """True when no two rows share `keys`; else which rows do. Distinct 64-bit fingerprints of
    the keys prove it: address strings are hashed once, a fraction of the cost of comparing
    them, which is left for a frame where two fingerprints meet."""
    if not frame.select(keyed(*keys).is_duplicated().any()).collect().item():
        return True
    return frame.select(~pl.struct(*keys).is_duplicated())
