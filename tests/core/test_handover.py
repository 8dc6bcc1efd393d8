"""A hand-over from one process to another carries frames and arrays through files that the
receiver maps: what arrives equals what was sent, the pickle itself stays small, and no file is
left behind."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import polars as pl

from core.handover import cleared, received, sent

ROWS = 50_000


def test_a_hand_over_arrives_whole_through_mapped_files_and_leaves_none(tmp_path):
    directory = cleared(tmp_path / "handed")
    # What the other process sends: a frame of every kind of column the tail's basis holds, a
    # large array, a small one and a plain dict.
    frame = pl.DataFrame({
        "chain_id": [1, 56] * (ROWS // 2),
        "pair": [f"0x{i:040x}" for i in range(ROWS)],
        "price_usd": [None if i % 7 == 0 else i / 4 for i in range(ROWS)],
    })
    sending = {"frame": frame, "places": np.arange(ROWS, dtype=np.int64) * 3,
               "small": np.array([5, 6, 7]), "ordinals": {(1, "0xab"): 0}}
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        data = pool.submit(sent, sending, directory).result(timeout=120)
    # 50,000 rows of three columns are over 2 MB: they travelled in files, not in the pickle.
    assert len(data) < 4096
    got = received(data)
    assert list(directory.iterdir()) == []
    frame = got["frame"]
    assert frame.height == ROWS
    assert frame.schema == {"chain_id": pl.Int64, "pair": pl.String, "price_usd": pl.Float64}
    assert frame.row(0) == (1, "0x" + "0" * 40, None)
    assert frame.row(ROWS - 1) == (56, f"0x{ROWS - 1:040x}", (ROWS - 1) / 4)
    assert frame["price_usd"].null_count() == len(range(0, ROWS, 7))
    assert frame["chain_id"].sum() == (1 + 56) * ROWS // 2
    places = got["places"]
    assert places[-1] == (ROWS - 1) * 3 and int(places.sum()) == 3 * ROWS * (ROWS - 1) // 2
    # Mapped, read-only: the receiver holds the file's pages, not a copy of them.
    assert not places.flags.writeable
    assert got["small"].tolist() == [5, 6, 7]
    assert got["ordinals"] == {(1, "0xab"): 0}


def test_files_of_hand_overs_never_received_are_cleared(tmp_path):
    directory = cleared(tmp_path / "handed")
    sent(pl.DataFrame({"a": [1, 2]}), directory)
    assert len(list(directory.iterdir())) == 1
    assert cleared(directory) == directory
    assert list(directory.iterdir()) == []
