"""A fold's state handed on one array per field."""

import numpy as np

from assets.folds import by_field


def test_the_chosen_rows_come_out_one_array_per_field() -> None:
    state = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert by_field(state, np.array([2, 0])).tolist() == [[5.0, 1.0], [6.0, 2.0]]


def test_rows_past_the_first_block_keep_their_place() -> None:
    # Row g, field f holds 10 g + f; 70 rows, taken backwards, cross two block edges.
    state = np.array([[10.0 * g + f for f in range(3)] for g in range(70)])
    rows = np.arange(69, -1, -1)
    out = by_field(state, rows)
    assert out.shape == (3, 70)
    assert out[2].tolist() == [10.0 * g + 2 for g in range(69, -1, -1)]
    assert by_field(state, rows[:0]).shape == (3, 0)
