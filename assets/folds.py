"""What the folds over every ledger row share: their state is a row of fields per group (a row's
update touches a few neighbouring cache lines), handed on as one array per field."""

import numba
import numpy as np

# Groups copied at a time: their rows (a few hundred bytes each) stay in the first-level cache
# while each field's stretch is written.
_BLOCK = 32


@numba.njit(cache=True, nogil=True)
def by_field(state, rows):
    """The fields of these rows of `state`, one contiguous array per field: copied a block of
    rows at a time, which keeps both the reads and the writes within a few cache lines where a
    strided transpose touches a line per field."""
    fields = state.shape[1]
    out = np.empty((fields, len(rows)), state.dtype)
    for start in range(0, len(rows), _BLOCK):
        end = min(start + _BLOCK, len(rows))
        for f in range(fields):
            for j in range(start, end):
                out[f, j] = state[rows[j], f]
    return out
