"""Runs whose process is gone are failed when the next code server starts; those still running,
or not yet started, are left."""

import subprocess
import sys
import time
import uuid

import dagster as dg
from dagster._core.events import EngineEventData

from pipelines.runs import alive, fail_orphaned_runs


def started_run(instance: dg.DagsterInstance, pid: int | None) -> dg.DagsterRun:
    run = instance.add_run(dg.DagsterRun(job_name="refresh", run_id=str(uuid.uuid4()),
                                         status=dg.DagsterRunStatus.STARTED))
    if pid is not None:
        instance.report_engine_event("Started process for run", run, EngineEventData(
            metadata={"pid": dg.MetadataValue.text(str(pid))}))
    return run


def status(instance: dg.DagsterInstance, run: dg.DagsterRun) -> dg.DagsterRunStatus:
    found = instance.get_run_by_id(run.run_id)
    assert found is not None
    return found.status


def test_a_run_whose_process_is_gone_is_failed_and_the_others_left():
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    with dg.instance_for_test() as instance:
        live = started_run(instance, running.pid)
        gone = started_run(instance, ended.pid)
        unsaid = started_run(instance, None)
        try:
            assert fail_orphaned_runs(instance) == [gone.run_id]
            assert status(instance, gone) == dg.DagsterRunStatus.FAILURE
            assert status(instance, live) == dg.DagsterRunStatus.STARTED
            assert status(instance, unsaid) == dg.DagsterRunStatus.STARTED
            # Once its process is killed, the live one goes too; a failed run is not failed again.
            running.kill()
            running.wait()
            assert fail_orphaned_runs(instance) == [live.run_id]
            assert status(instance, live) == dg.DagsterRunStatus.FAILURE
        finally:
            running.kill()
            running.wait()


def test_a_pid_used_again_by_a_later_process_is_not_the_run():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert alive(child.pid, time.time())
        # Said to be the run's before the process now holding the pid had started: another's.
        assert not alive(child.pid, time.time() - 60)
    finally:
        child.kill()
        child.wait()
    assert not alive(child.pid, time.time())
