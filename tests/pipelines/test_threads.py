"""The threads executor: a run's steps a few at once in its process, never two heavy steps
together, and a failing step failing the run as it would one at a time."""

import threading

import dagster as dg
import pytest

from assets.domains import HEAVY_TAG
from pipelines import threads
from pipelines.threads import steps_at_once, threads_executor

# Steps that meet here can only finish if they run at the same time: run one after another,
# the first waits alone and the barrier breaks after its timeout.
MEETING = threading.Barrier(2, timeout=20)
HEAVY_MEETING = threading.Barrier(2, timeout=1)
HEAVY_NOW = {"running": 0, "most": 0}
LOCK = threading.Lock()


def _heavy_enters() -> None:
    with LOCK:
        HEAVY_NOW["running"] += 1
        HEAVY_NOW["most"] = max(HEAVY_NOW["most"], HEAVY_NOW["running"])


def _heavy_leaves() -> None:
    with LOCK:
        HEAVY_NOW["running"] -= 1


@dg.op
def meets() -> int:
    MEETING.wait()
    return 1


@dg.op(tags={HEAVY_TAG: "yes"})
def heavy_meets() -> int:
    _heavy_enters()
    try:
        MEETING.wait()
    finally:
        _heavy_leaves()
    return 2


@dg.op(tags={HEAVY_TAG: "yes"})
def heavy_alone() -> int:
    _heavy_enters()
    try:
        # Two heavy steps meet here only if they run together; alone, the first waits out
        # the timeout and the second finds the meeting broken.
        HEAVY_MEETING.wait()
    except threading.BrokenBarrierError:
        pass
    finally:
        _heavy_leaves()
    return 3


@dg.op
def adds(a: int, b: int) -> int:
    return a + b


@dg.op
def fails() -> int:
    raise ValueError("this step fails")


@dg.op
def after_failure(value: int) -> int:
    return value


def two_meet() -> dg.JobDefinition:
    """Two independent steps that must run at once, and one after both."""
    @dg.job(executor_def=threads_executor)
    def meeting() -> None:
        adds(meets.alias("left")(), meets.alias("right")())

    return meeting


def heavy_and_light() -> dg.JobDefinition:
    """Three heavy steps and a light one, with room for four at once."""
    @dg.job(executor_def=threads_executor.configured({"max_concurrent": 4}))
    def heavy() -> None:
        alone = adds.alias("both_alone")(heavy_alone(), heavy_alone.alias("heavy_alone_too")())
        adds(adds(heavy_meets(), alone), meets())

    return heavy


def one_fails() -> dg.JobDefinition:
    """A failing step, the step after it, and an independent step."""
    @dg.job(executor_def=threads_executor)
    def failing() -> None:
        after_failure(fails())
        adds.alias("independent")(meets.alias("one")(), meets.alias("other")())

    return failing


def _run(job_fn, instance: dg.DagsterInstance) -> dg.JobExecutionResult:
    return dg.execute_job(dg.reconstructable(job_fn), instance, raise_on_error=False)


def _outcomes(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    ends = {dg.DagsterEventType.STEP_SUCCESS: "success",
            dg.DagsterEventType.STEP_FAILURE: "failure"}
    return {entry.step_key: ends[entry.dagster_event_type]
            for entry in instance.all_logs(run_id) if entry.dagster_event_type in ends}


def test_independent_steps_run_at_the_same_time() -> None:
    MEETING.reset()
    with dg.instance_for_test() as instance:
        result = _run(two_meet, instance)
        assert result.success
        assert _outcomes(instance, result.run_id) == {
            "left": "success", "right": "success", "adds": "success"}
        starts = [entry.step_key for entry in instance.all_logs(result.run_id)
                  if entry.dagster_event_type == dg.DagsterEventType.STEP_START]
        # `adds` starts only after both its inputs' steps.
        assert starts[-1] == "adds" and sorted(starts[:2]) == ["left", "right"]


def test_a_heavy_step_runs_beside_a_light_one_never_beside_another_heavy() -> None:
    MEETING.reset()
    HEAVY_MEETING.reset()
    HEAVY_NOW.update(running=0, most=0)
    with dg.instance_for_test() as instance:
        result = _run(heavy_and_light, instance)
        assert result.success
    assert HEAVY_NOW["most"] == 1


def test_a_failing_step_fails_the_run_and_does_not_start_what_follows_it() -> None:
    MEETING.reset()
    with dg.instance_for_test() as instance:
        result = _run(one_fails, instance)
        assert not result.success
        assert _outcomes(instance, result.run_id) == {
            "fails": "failure", "one": "success", "other": "success",
            "independent": "success"}
        started = {entry.step_key for entry in instance.all_logs(result.run_id)
                   if entry.dagster_event_type == dg.DagsterEventType.STEP_START}
        assert "after_failure" not in started
        failure = next(entry for entry in instance.all_logs(result.run_id)
                       if entry.dagster_event_type == dg.DagsterEventType.STEP_FAILURE)
        assert "this step fails" in str(failure.dagster_event.step_failure_data.error)


@dg.op
def one() -> int:
    return 1


@dg.op
def plus_one(number: int) -> int:
    return number + 1


def in_a_row() -> dg.JobDefinition:
    @dg.job(executor_def=threads_executor)
    def one_then_another() -> None:
        plus_one(one())

    return one_then_another


def test_an_error_outside_a_steps_code_fails_the_run_saying_what_it_was(monkeypatch) -> None:
    """An error the step's own handling did not catch (not the op's: the machinery's) ends the
    run with that error, not with the plan's complaint that it did not complete."""
    sequence = threads.dagster_event_sequence_for_step

    def breaks_at_the_second(context):
        if context.step.key == "plus_one":
            raise RuntimeError("the machinery broke here")
        yield from sequence(context)

    monkeypatch.setattr(threads, "dagster_event_sequence_for_step", breaks_at_the_second)
    with dg.instance_for_test() as instance:
        result = _run(in_a_row, instance)
        assert not result.success
        (failure,) = [entry for entry in instance.all_logs(result.run_id)
                      if entry.dagster_event_type == dg.DagsterEventType.RUN_FAILURE]
        assert "the machinery broke here" in str(failure.dagster_event.event_specific_data)


def test_steps_at_once_comes_from_the_environment_within_bounds(monkeypatch) -> None:
    monkeypatch.delenv("CHAINTAPE_STEPS_AT_ONCE", raising=False)
    assert steps_at_once() == 2
    monkeypatch.setenv("CHAINTAPE_STEPS_AT_ONCE", "4")
    assert steps_at_once() == 4
    for value in ("0", "65", "two", "-1", ""):
        monkeypatch.setenv("CHAINTAPE_STEPS_AT_ONCE", value)
        with pytest.raises(ValueError, match="CHAINTAPE_STEPS_AT_ONCE"):
            steps_at_once()


def test_steps_at_once_out_of_bounds_in_the_run_config_is_refused() -> None:
    with dg.instance_for_test() as instance, pytest.raises(ValueError, match="max_concurrent=-1"):
        dg.execute_job(dg.reconstructable(two_meet), instance, raise_on_error=False,
                       run_config={"execution": {"config": {"max_concurrent": -1}}})


def test_the_threads_executor_runs_on_the_dagster_it_was_written_for() -> None:
    # The executor drives Dagster's private execution API, which changes between releases
    # without notice: another release fails here until pipelines/threads.py is read against it
    # and WRITTEN_FOR moved (docs/pipeline.md).
    import dagster as dg

    from pipelines.threads import WRITTEN_FOR

    assert dg.__version__ == WRITTEN_FOR, (
        f"dagster {dg.__version__} is not {WRITTEN_FOR}, which the threads executor's use of "
        "dagster._core was written against: read pipelines/threads.py against the new release")
