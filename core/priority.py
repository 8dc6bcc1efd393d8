"""The CPU priority of chaintape's batch work where it shares a machine with the live path."""

import os

# Where the idle scheduling class is missing (not Linux), batch work runs at this niceness.
BATCH_NICENESS = 10
# The live path's writers (the lake's and the tail's) run at this niceness, well below the
# edge: a lookup is milliseconds' work that a request waits for, a swap's way to the edge
# seconds', so the writers take a core's time only when the edge does not want it. At 15 a
# writer weighs 36 against the edge's 1,024 (at 5, 335): the writers still take every core the
# batch, in the idle class, would otherwise have.
WRITER_NICENESS = 15


def as_batch() -> None:
    """Run this process, and every process it starts, as batch work: the refreshes and the
    live tail's snapshot preparation. The live path (the lake's writer, the tail writer, the
    edge) is served first and the batch takes the rest, so a burst of batch work holds up
    neither a swap on its way to the edge nor a lookup. In Linux's idle scheduling class a
    process runs only on a core nothing else wants and gives way the moment something does;
    at a high niceness it would still keep a core for its time slice (milliseconds, which a
    lookup waits)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(BATCH_NICENESS)
