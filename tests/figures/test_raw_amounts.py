"""Raw amounts read in place: a 128-bit integer becomes the float nearest to it, as Python's own
exact int-to-float conversion gives it."""

from decimal import Decimal

import numba
import numpy as np
import pyarrow as pa
import pytest

from figures.raw_amounts import as_float, halves


@numba.njit
def _floats(rows):
    return np.array([as_float(rows[i, 0], rows[i, 1]) for i in range(len(rows))])


# Values around the edges of the conversion: below, at and past 2^64; halfway between two
# floats (ties go to the even one) and one above halfway, where only a low bit far below the
# float's precision decides; the largest a decimal of 38 digits holds.
VALUES = [0, 1, 2**53 + 1, 2**64 - 1, 2**64, 2**64 + 1, 2**70 + 2**17, 2**70 + 2**17 + 1,
          2**70 + 3 * 2**17, 2**116 + 2**63, 2**116 + 2**63 + 1, 10**20, 10**38 - 1,
          (2**53 - 1) * 2**72 + 2**71, 2**125 + 2**72, 123456789 * 10**18]


def test_a_raw_amount_is_the_nearest_float() -> None:
    array = pa.array([Decimal(v) for v in VALUES], pa.decimal128(38, 0))
    assert _floats(halves(array)).tolist() == [float(v) for v in VALUES]


@pytest.mark.parametrize("offset", [0, 3])
def test_halves_read_a_slice_in_place(offset: int) -> None:
    array = pa.array([Decimal(v) for v in VALUES], pa.decimal128(38, 0)).slice(offset, 4)
    rows = halves(array)
    assert [int(lo) + (int(hi) << 64) for lo, hi in rows] == VALUES[offset:offset + 4]
