"""Objects handed from one process to another with their frames and arrays in files, which the
receiver maps rather than reads: pickled whole, a frame is copied twice in the sender (its
Arrow bytes, then the pickle holding them) and twice in the receiver while it is read back,
so a hand-over of a few hundred MB took a few hundred MB more on each side for its moment."""

import io
import mmap
import os
import pickle
import uuid
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl
import pyarrow as pa

# Arrays smaller than this travel in the pickle: a file is not worth it.
SMALL_BYTES = 1 << 16


class _Filing(pickle.Pickler):
    """A pickler that writes each frame and each array not small to a file of `directory`."""

    def __init__(self, file: io.BytesIO, directory: Path) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.directory = directory

    def _path(self, suffix: str) -> Path:
        return self.directory / f"{os.getpid()}-{uuid.uuid4().hex}{suffix}"

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, pl.DataFrame):
            path = self._path(".arrow")
            obj.write_ipc(path, compression="uncompressed")
            return _mapped_frame, (str(path),)
        if isinstance(obj, np.ndarray) and obj.dtype != object and obj.nbytes >= SMALL_BYTES:
            path = self._path(".npy")
            np.save(path, obj, allow_pickle=False)
            return _mapped_array, (str(path),)
        return NotImplemented


def mapped_frame(path: Path | str, advice: int = mmap.MADV_NORMAL) -> pl.DataFrame:
    """An uncompressed Arrow file as a frame over its memory-mapped pages (read-only; `advice`
    tells the kernel how they will be read)."""
    with open(path, "rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ)
    mapped.madvise(advice)
    table = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(mapped))).read_all()
    return cast(pl.DataFrame, pl.from_arrow(table, rechunk=False))


def _mapped_frame(path: str) -> pl.DataFrame:
    frame = mapped_frame(path)
    # The mapping outlives the file's name: nothing is left to remove later.
    os.unlink(path)
    return frame


def _mapped_array(path: str) -> np.ndarray:
    array = np.load(path, mmap_mode="r")
    os.unlink(path)
    return array


def sent(obj: object, directory: Path) -> bytes:
    """`obj` pickled with its frames and arrays written to files of `directory` (which must
    exist), for `received` in another process on this machine."""
    buffer = io.BytesIO()
    _Filing(buffer, directory).dump(obj)
    return buffer.getvalue()


def received(data: bytes) -> Any:
    """What `sent` pickled, its frames and arrays mapped from their files (read-only), which
    are then removed."""
    return pickle.loads(data)


def cleared(directory: Path) -> Path:
    """`directory`, made if missing, without the files of hand-overs never received (their
    receiver stopped first)."""
    directory.mkdir(parents=True, exist_ok=True)
    for left in directory.iterdir():
        left.unlink(missing_ok=True)
    return directory
