"""`up`'s supervision with real child processes: a component that stops is restarted after a
backoff that doubles while it keeps stopping, the others never touched; Ctrl-C stops all."""

import os
import signal
import subprocess
import sys
import threading

from pipelines.supervise import BACKOFF_FIRST_S, STEADY_S, Supervisor


def python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], process_group=0)


def stopped(process: subprocess.Popen) -> int:
    return process.wait(30)


def test_a_stopped_component_is_restarted_with_backoff_and_the_others_left_alone():
    said: list[str] = []
    starts: list[bool] = []
    supervisor = Supervisor(said.append)

    def failing(again: bool) -> subprocess.Popen:
        starts.append(again)
        return python("import sys; sys.exit(3)")

    steady = supervisor.start("edge", lambda _: python("import time; time.sleep(600)"))
    flaky = supervisor.start("live tail", failing)
    edge_pid = steady.process.pid
    try:
        stopped(flaky.process)
        t0 = flaky.started_at
        supervisor.check(now=t0)
        assert said == [f"the live tail stopped (exit 3); restarting it in {BACKOFF_FIRST_S:g}s"]
        supervisor.check(now=t0 + BACKOFF_FIRST_S / 2)  # not yet
        assert starts == [False]
        supervisor.check(now=t0 + BACKOFF_FIRST_S)
        assert starts == [False, True] and flaky.restarts == 1
        assert said[-1].startswith("the live tail restarted (pid ")
        # Stopping again at once: the backoff doubles.
        stopped(flaky.process)
        t1 = t0 + BACKOFF_FIRST_S
        supervisor.check(now=t1)
        assert said[-1].endswith(f"restarting it in {2 * BACKOFF_FIRST_S:g}s")
        supervisor.check(now=t1 + BACKOFF_FIRST_S)
        assert starts == [False, True]
        supervisor.check(now=t1 + 2 * BACKOFF_FIRST_S)
        assert starts == [False, True, True]
        # After a steady run, the backoff starts again from the first (a second past the
        # steady time: at exactly it, the sums of float instants may fall a hair short).
        stopped(flaky.process)
        t2 = t1 + 2 * BACKOFF_FIRST_S
        supervisor.check(now=t2 + STEADY_S + 1)
        assert said[-1].endswith(f"restarting it in {BACKOFF_FIRST_S:g}s")
        # The steady one was never restarted.
        assert steady.process.pid == edge_pid and steady.process.poll() is None
        assert steady.restarts == 0
    finally:
        supervisor.stop()
    assert steady.process.poll() is not None


def test_watch_runs_until_interrupted_then_stop_ends_every_component():
    said: list[str] = []
    supervisor = Supervisor(said.append)
    part = supervisor.start("edge", lambda _: python("import time; time.sleep(600)"))
    # Ctrl-C, as the terminal sends it, half a second into watching.
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        supervisor.watch()
    finally:
        supervisor.stop()
    assert said == ["stopping"]
    assert part.process.poll() is not None


def test_a_second_sigterm_while_stopping_leaves_no_component_running():
    supervisor = Supervisor(lambda _: None)
    # Each takes a second to stop once asked, as a run's steps do: time for a second signal.
    slow = ("import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: "
            "(time.sleep(1), sys.exit(0))); print('ready', flush=True); time.sleep(600)")

    def launch(_: bool) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", slow], process_group=0,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        return child

    parts = [supervisor.start(name, launch) for name in ("edge", "live tail")]
    before = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # as `chaintape up` has it
    try:
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
        supervisor.stop()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert [part.process.wait(5) for part in parts] == [0, 0]
    for part in parts:
        part.process.stdout.close()
