"""The runs a stopped code server took with it. Each run is a process the code server starts,
in its process group, so a code server that stops (killed, or restarted by `up`) ends its runs
with it, but their records stay started: holding the one run at a time the queue allows, and
the lake sensor waiting for a refresh that will never end. The next code server's start fails
them, and the sensor makes their days again."""

import os
from pathlib import Path

import dagster as dg

UNDER_WAY = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
# A process's start time counts in these since boot (proc(5)).
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail each run recorded as under way whose process is gone; their ids. A run that has not
    yet said which process it is (between its launch and its first event) is left."""
    failed = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=UNDER_WAY)):
        run = record.dagster_run
        process = process_of(instance, run.run_id)
        if process is None or alive(*process):
            continue
        instance.report_engine_event(
            f"The run's process (pid {process[0]}) is gone: its code server stopped.", run)
        instance.report_run_failed(run)
        failed.append(run.run_id)
    return failed


def process_of(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """The process a run said it runs in, and when it said so (its first events)."""
    for record in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT,
                                               limit=5).records:
        event = record.event_log_entry.dagster_event
        pid = None if event is None else event.engine_event_data.metadata.get("pid")
        if pid is not None:
            return int(str(pid.value)), record.event_log_entry.timestamp
    return None


def alive(pid: int, since: float) -> bool:
    """Whether process `pid` runs and is the one that was running at `since` (a pid is used
    again once its process ends: one started after `since` is another)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    booted = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                  if line.startswith("btime "))
    # Fields after the command: state is the first, the start time the twentieth.
    started = booted + int(fields[19]) / TICKS_PER_S
    return fields[0] != "Z" and started <= since + 1
