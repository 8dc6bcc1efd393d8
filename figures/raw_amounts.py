"""The lake's raw token amounts (decimal128 integers) read in place as two 64-bit halves, and
turned into floats exactly as a cast would: what the numba folds over every swap read instead
of decoded and cast columns."""

import numba
import numpy as np
import pyarrow as pa

# A swap's raw amounts in the lake, in the order the folds take them.
RAW_SWAPPED = ("amount0_in", "amount1_in", "amount0_out", "amount1_out")


def halves(values: pa.Array) -> np.ndarray:
    """Raw amounts (decimal128) as rows of low and high 64-bit halves, read in place; a null's
    halves are whatever its slot holds."""
    words = np.frombuffer(values.buffers()[1], dtype=np.uint64)
    return words[2 * values.offset:2 * (values.offset + len(values))].reshape(-1, 2)


@numba.njit(nogil=True, inline="always")
def _bits(word):
    """How many bits a non-zero word needs."""
    n = 1
    for width in (32, 16, 8, 4, 2, 1):
        if word >> np.uint64(width):
            word >>= np.uint64(width)
            n += width
    return n


@numba.njit(nogil=True, inline="always")
def as_float(lo, hi):
    """A non-negative 128-bit integer (its halves) as the nearest float, ties to even: the
    high 64 bits that matter, with a sticky bit for any below, round once."""
    if hi == np.uint64(0):
        return np.float64(lo)
    shift = _bits(hi)
    if shift == 64:
        top, rest = hi, lo
    else:
        top = (hi << np.uint64(64 - shift)) | (lo >> np.uint64(shift))
        rest = lo & ((np.uint64(1) << np.uint64(shift)) - np.uint64(1))
    if rest:
        top |= np.uint64(1)
    return np.float64(top) * 2.0 ** shift
