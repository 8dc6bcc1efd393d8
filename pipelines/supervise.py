"""What `chaintape up` runs beside itself: each component a child process in a process group of
its own, restarted with backoff when it stops, so that one failure (a bad publish, a node gone)
stops no other. A component's group goes with it: what it started (an edge's workers, a run)
is not left behind to hold a port or the warehouse."""

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# A component that stops is started again after this long, doubled at each stop in a row up
# to BACKOFF_MOST_S; one that ran STEADY_S before stopping starts the doubling again.
BACKOFF_FIRST_S = 1.0
BACKOFF_MOST_S = 60.0
STEADY_S = 300.0
POLL_S = 0.5


@dataclass
class Component:
    """A child process `up` keeps running: how it starts (`restarting` says whether it did
    before), when it last did, and when it starts again after a stop."""

    name: str
    launch: Callable[[bool], subprocess.Popen]
    process: subprocess.Popen = field(init=False)
    started_at: float = field(init=False)
    delay_s: float = BACKOFF_FIRST_S
    due_at: float | None = None
    restarts: int = 0

    def __post_init__(self) -> None:
        self.process = self.launch(False)
        self.started_at = time.monotonic()


class Supervisor:
    """The components of one `up`: started, watched, restarted with backoff, stopped together."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.components: dict[str, Component] = {}

    def start(self, name: str, launch: Callable[[bool], subprocess.Popen]) -> Component:
        """Start a component (`launch(False)`); a stop later restarts it (`launch(True)`)."""
        self.components[name] = Component(name, launch)
        return self.components[name]

    def check(self, now: float | None = None) -> None:
        """Note the components that stopped and restart those whose backoff has passed."""
        now = time.monotonic() if now is None else now
        for part in self.components.values():
            if part.due_at is None:
                code = part.process.poll()
                if code is None:
                    continue
                _signal_group(part.process, signal.SIGKILL)
                if now - part.started_at >= STEADY_S:
                    part.delay_s = BACKOFF_FIRST_S
                part.due_at = now + part.delay_s
                self.say(f"the {part.name} stopped (exit {code}); restarting it in "
                         f"{part.delay_s:g}s")
                part.delay_s = min(2 * part.delay_s, BACKOFF_MOST_S)
            elif now >= part.due_at:
                part.process = part.launch(True)
                part.started_at, part.due_at = now, None
                part.restarts += 1
                self.say(f"the {part.name} restarted (pid {part.process.pid}, restart "
                         f"{part.restarts})")

    def watch(self) -> None:
        """Keep every component running until interrupted (Ctrl-C, or SIGTERM raised as one)."""
        try:
            while True:
                self.check()
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            self.say("stopping")

    def stop(self) -> None:
        """Stop every component with its group, killing those that do not stop within 15 s; a
        second Ctrl-C or SIGTERM meanwhile does not cut it short (which would leave the rest
        running, parentless)."""
        running = [p.process for p in self.components.values() if p.due_at is None]
        with _signals_held():
            for child in running:
                _signal_group(child, signal.SIGTERM)
            for child in running:
                try:
                    child.wait(15)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                _signal_group(child, signal.SIGKILL)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM ignored within, their handlers put back after."""
    held = (signal.SIGINT, signal.SIGTERM)
    before = [signal.signal(number, signal.SIG_IGN) for number in held]
    try:
        yield
    finally:
        for number, handler in zip(held, before, strict=True):
            signal.signal(number, handler)


def _signal_group(child: subprocess.Popen, number: int) -> None:
    """Signal a component's process group (its own: started with `process_group=0`)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, number)
