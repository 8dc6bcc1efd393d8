"""A lake holding only swaps: what makes its days the days products are made for."""

from datetime import datetime
from decimal import Decimal
from pathlib import Path

import polars as pl

from core.columns import RAW
from sources.lake import LakeWriter


def swaps_lake(root: Path, times: list[datetime], blocks: list[int] | None = None) -> LakeWriter:
    """A lake of one pool's swaps at `times`, in `blocks` (else 1, 2, ...): its days are the
    lake's days of swaps."""
    lake = LakeWriter(root)
    lake.write("swaps", swap_rows(times, blocks))
    return lake


def swap_rows(times: list[datetime], blocks: list[int] | None = None,
              chain_id: int = 1) -> pl.DataFrame:
    """One pool's swaps on a chain at `times`, in `blocks` (else 1, 2, ...), as the lake holds
    them."""
    n = len(times)
    return pl.DataFrame({
        "chain_id": [chain_id] * n, "block_number": blocks or list(range(1, n + 1)),
        "log_index": [0] * n, "block_time": pl.Series(times, dtype=pl.Datetime("us", "UTC")),
        "tx_hash": [f"0x{chain_id}{i}" for i in range(n)], "pair": ["0xa"] * n,
        "maker": ["0xm"] * n, "sender": ["0xm"] * n, "recipient": ["0xm"] * n,
        "amount0_in": pl.Series([Decimal(5)] * n, dtype=RAW),
        "amount1_in": pl.Series([Decimal(0)] * n, dtype=RAW),
        "amount0_out": pl.Series([Decimal(0)] * n, dtype=RAW),
        "amount1_out": pl.Series([Decimal(7)] * n, dtype=RAW),
        "gas_used": [100_000] * n, "tx_fee_raw": pl.Series([None] * n, dtype=RAW)})
