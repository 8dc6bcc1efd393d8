"""A Dagster logger that prints one line per finished step and check, and a step's own progress
through long work (`assets.progress`): progress on a terminal."""

import logging
import os
import sys
import time

import dagster as dg

from assets.progress import PROGRESS

_SHOWN = {"STEP_SUCCESS": "done", "STEP_FAILURE": "FAILED", "STEP_SKIPPED": "skipped",
          "ASSET_CHECK_EVALUATION": "check"}


def _terminal() -> int | None:
    """A descriptor of standard error as the command found it. A run captures the process's
    standard error into its compute log and mirrors it back with `tail -F`, which drops what
    arrives in its last second (dagster-io/dagster#23336): the last steps' lines. None without
    a descriptor (a test's capture, a Celery worker's logging proxy)."""
    try:
        return os.dup(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return None


# Taken when the module is imported, before any run captures descriptor 2.
_TERMINAL = _terminal()


class _StepLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.started = time.perf_counter()

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or record.__dict__
        event = meta.get("dagster_event")
        if event is None and record.levelno == PROGRESS:
            self.write("progress", f"{meta.get('step_key') or ''}: {meta.get('orig_message')}")
            return
        if event is None or event.event_type_value not in _SHOWN:
            return
        label = _SHOWN[event.event_type_value]
        what = event.step_key or ""
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            label = "check passed" if data.passed else "CHECK FAILED"
            what = f"{data.asset_key.to_user_string()}:{data.check_name}"
        self.write(label, what)

    def write(self, label: str, what: str) -> None:
        """One line: the time since the run began, what happened, and to what."""
        elapsed = time.perf_counter() - self.started
        line = f"  [{elapsed:6.1f}s] {label:<12} {what}\n"
        if _TERMINAL is None:
            print(line, end="", file=sys.stderr, flush=True)
        else:
            os.write(_TERMINAL, line.encode())


@dg.logger
def step_lines(_context) -> logging.Logger:
    """Prints each step's and check's outcome as it happens."""
    log = logging.getLogger("chaintape.steps")
    log.setLevel(logging.DEBUG)
    log.handlers = [_StepLines()]
    log.propagate = False
    return log
