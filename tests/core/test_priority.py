"""Batch work yields to the live path: a process made batch work, and what it starts, runs
in the idle scheduling class."""

import os
import subprocess
import sys


def test_batch_work_and_the_processes_it_starts_run_in_the_idle_class() -> None:
    child = ("import os, subprocess, sys; from core.priority import as_batch; as_batch(); "
             "print(os.sched_getscheduler(0)); sys.stdout.flush(); "
             "subprocess.run([sys.executable, '-c', "
             "'import os; print(os.sched_getscheduler(0))'], check=True)")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          check=True, cwd=os.getcwd())
    assert done.stdout.split() == [str(os.SCHED_IDLE)] * 2
    # This process is untouched.
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
