"""A long-running writer renewed in place: once its resident memory has grown by an allowance
over its level after warm-up, it runs itself again (exec, the same process id) between two
complete steps. What grows is native memory that Delta Lake's writer and table log keep a little
of at every commit (tens of kilobytes, measured with bare `write_deltalake` appends; delta-rs
issues 2068 and 4241), which no setting of ours returns; a writer's state is the lake's, so the
renewed process goes on where its last mark stands, as it does after a crash."""

import logging
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from multiprocessing import resource_tracker
from typing import NoReturn

log = logging.getLogger("chaintape.renewal")
# The level a process's memory is measured against is taken this long after it starts: its
# caches and pools filled.
WARM_S = float(os.environ.get("CHAINTAPE_RENEW_WARM_S", "600"))
# How far over that level its resident memory may grow before it is renewed.
ABOVE_MB = float(os.environ.get("CHAINTAPE_RENEW_ABOVE_MB", "64"))
# A process's memory swings with its work (a tail holds more trades as a snapshot ages): what
# is measured is its floor, the least it held over this long, which only a leak raises.
WINDOW_S = float(os.environ.get("CHAINTAPE_RENEW_WINDOW_S", "120"))
# How many times this process has been renewed (its environment carries the count on).
RENEWALS = "CHAINTAPE_RENEWALS"
MB = 1 << 20


def resident_bytes() -> int:
    """This process's resident set size."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def exec_again(argv: list[str]) -> NoReturn:
    """Run the command `argv` (a Python script and its arguments) in this process's place. The
    resource tracker `multiprocessing` started for this image is stopped and waited for first:
    it would end with the image's pipe to it, as a child the new image never reaps."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]
    os.execv(sys.executable, [sys.executable, *argv])


class Renewal:
    """When a process that calls `step` after each complete step is due to be renewed, and its
    renewal: the command `argv` (this process's own by default: one that would start over, say
    from a block named, is given the command that goes on) run in its place. `resident`,
    `clock` and `execute` are the system's unless a test gives its own."""

    def __init__(self, name: str, progress: Callable[[str], None] = log.info,
                 argv: list[str] | None = None, warm_s: float = WARM_S,
                 above_mb: float = ABOVE_MB, resident: Callable[[], int] = resident_bytes,
                 clock: Callable[[], float] = time.monotonic,
                 execute: Callable[[list[str]], NoReturn] = exec_again,
                 window_s: float = WINDOW_S) -> None:
        self.name, self.progress = name, progress
        self.argv = list(sys.argv if argv is None else argv)
        self.warm_s, self.above, self.window_s = warm_s, above_mb * MB, window_s
        self.resident, self.clock, self.execute = resident, clock, execute
        self.started = clock()
        self.level: int | None = None
        # The readings of the last `window_s`, each (when, bytes), whose least is the floor.
        self.readings: deque[tuple[float, int]] = deque()

    def floor(self) -> int:
        """A new reading, and the least of the readings over the last `window_s`."""
        now = self.clock()
        self.readings.append((now, self.resident()))
        while self.readings[0][0] < now - self.window_s:
            self.readings.popleft()
        return min(held for _, held in self.readings)

    def due(self) -> bool:
        """Whether the process's floor has risen past its allowance over its level (the floor
        it had once warm)."""
        floor = self.floor()
        if self.level is None:
            if self.clock() - self.started >= self.warm_s:
                self.level = floor
            return False
        return floor > self.level + self.above

    def step(self, before: Callable[[], None] = lambda: None) -> None:
        """After a complete step: renew the process when it is due (`before` lets go of what
        it runs beside it first)."""
        if not self.due():
            return
        assert self.level is not None  # taken before anything is due
        count = int(os.environ.get(RENEWALS, "0")) + 1
        self.progress(f"{self.name}: renewed in place (time {count}): at least "
                      f"{self.floor() / MB:,.0f} MB resident over {self.window_s:,.0f} s, over "
                      f"its {self.level / MB:,.0f} MB after warm-up by more than "
                      f"{self.above / MB:,.0f} MB")
        before()
        os.environ[RENEWALS] = str(count)
        self.execute(self.argv)
