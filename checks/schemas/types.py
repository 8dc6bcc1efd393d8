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
