"""The wallet books' settings and their folding processes' lifetime."""

import os
import signal
import subprocess
import sys

import pytest

from assets.wallets.books import PIECE_ROWS, piece_rows
from tests.conftest import until


def test_a_piece_is_the_default_size_unless_the_environment_says_another(monkeypatch):
    monkeypatch.delenv("CHAINTAPE_LEDGER_PIECE_ROWS", raising=False)
    assert piece_rows() == PIECE_ROWS
    monkeypatch.setenv("CHAINTAPE_LEDGER_PIECE_ROWS", "250")
    assert piece_rows() == 250


@pytest.mark.parametrize("said", ["0", "-3", "1e6", "many", ""])
def test_a_piece_size_that_is_not_a_whole_number_of_rows_is_refused(monkeypatch, said):
    monkeypatch.setenv("CHAINTAPE_LEDGER_PIECE_ROWS", said)
    with pytest.raises(ValueError, match="CHAINTAPE_LEDGER_PIECE_ROWS"):
        piece_rows()


RUN = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from assets.wallets.books import exit_with

if __name__ == "__main__":
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=exit_with, initargs=(os.getpid(),))
    print(pool.submit(os.getpid).result(), flush=True)
    time.sleep(600)
"""


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[1].startswith("Z")


def test_a_folding_process_exits_when_the_run_that_started_it_is_killed(tmp_path):
    # The run's process is killed with SIGKILL: it cannot stop its folding process, which must
    # not wait for work for ever.
    with subprocess.Popen([sys.executable, "-c", RUN], stdout=subprocess.PIPE, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.getcwd()}) as run:
        assert run.stdout is not None
        folding = int(run.stdout.readline())
        assert not gone(folding)
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
        until(lambda: gone(folding), 10, "the folding process gone")
