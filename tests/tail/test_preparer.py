"""The process where the tail writer prepares snapshots ends after each one, so what a
preparation took is given back between snapshots, not held by an idle process."""

import os
from pathlib import Path

from tail.basis import preparer


def test_each_snapshot_is_prepared_by_a_process_that_then_ends():
    pool = preparer()
    try:
        first = pool.submit(os.getpid).result(timeout=60)
        second = pool.submit(os.getpid).result(timeout=60)
    finally:
        pool.shutdown(wait=True)
    assert first != second != os.getpid()
    # The first has ended (and been reaped: no process of that id is left).
    assert not Path(f"/proc/{first}").exists()
