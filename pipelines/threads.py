"""A run's steps on threads of the run's own process, a few at once: the in-process executor
without its one-at-a-time. A step's work is mostly polars, Arrow and Delta Lake, which release
the interpreter while they compute, so two cores run two steps; a process per step would cost
each step an interpreter and the imports, several times the work of most of them."""

import os
import queue
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import cast

import dagster as dg
from dagster._core.errors import DagsterExecutionInterruptedError
from dagster._core.events import DagsterEvent, EngineEventData
from dagster._core.execution.api import ExecuteRunWithPlanIterable
from dagster._core.execution.compute_logs import create_compute_log_file_key
from dagster._core.execution.context.system import (
    PlanExecutionContext,
    PlanOrchestrationContext,
    StepExecutionContext,
)
from dagster._core.execution.context_creation_job import PlanExecutionContextManager
from dagster._core.execution.plan.active import ActiveExecution
from dagster._core.execution.plan.execute_plan import dagster_event_sequence_for_step
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.execution.retries import RetryMode, get_retries_config
from dagster._core.execution.step_dependency_config import StepDependencyConfig
from dagster._core.executor.base import Executor

from assets.domains import HEAVY_TAG

# More threads than this would only contend for the interpreter and the cores.
MOST_AT_ONCE = 64
# The Dagster release whose private execution API (`dagster._core`) this module was written
# and tested against; the one module that uses it. An upgrade fails a test until this module
# is read against the new release (docs/pipeline.md, "Steps").
WRITTEN_FOR = "1.13.27"


@dataclass(frozen=True)
class _Finished:
    """A step thread's last item: the step ended, with the error that escaped it, if any."""

    key: str
    error: BaseException | None


def steps_at_once() -> int:
    """How many steps of a run go at once (CHAINTAPE_STEPS_AT_ONCE, by default 2: the cores
    of the machine this is sized for)."""
    value = os.environ.get("CHAINTAPE_STEPS_AT_ONCE", "2")
    return _bounded("CHAINTAPE_STEPS_AT_ONCE", value)


def _bounded(name: str, value: object) -> int:
    """`value` as a number of steps at once, or a ValueError naming `name`."""
    text = str(value)
    if not text.isdigit() or not 1 <= int(text) <= MOST_AT_ONCE:
        raise ValueError(f"{name}={value!r}: expected a whole number in [1, {MOST_AT_ONCE}]")
    return int(text)


@dg.executor(name="threads", config_schema={
    "retries": get_retries_config(),
    "max_concurrent": dg.Field(int, is_required=False, default_value=0,
                               description="Steps at once; 0: CHAINTAPE_STEPS_AT_ONCE."),
})
def threads_executor(init_context: dg.InitExecutorContext) -> Executor:
    """Executes a run's steps in its process, up to `max_concurrent` at once on threads, and
    never two steps tagged `chaintape/heavy` together."""
    config = init_context.executor_config
    retries = RetryMode.from_config(cast(dict, config["retries"])) or RetryMode.ENABLED
    asked = config["max_concurrent"]
    return StepThreads(retries, _bounded("max_concurrent", asked) if asked else steps_at_once())


class StepThreads(Executor):
    """The executor `threads_executor` makes."""

    def __init__(self, retries: RetryMode, at_once: int) -> None:
        self._retries = retries
        self.at_once = at_once

    @property
    def retries(self) -> RetryMode:
        return self._retries

    @property
    def step_dependency_config(self) -> StepDependencyConfig:
        return StepDependencyConfig.default()

    def execute(self, plan_context: PlanOrchestrationContext,
                execution_plan: ExecutionPlan) -> Iterator[DagsterEvent]:
        """The run's events, as its steps make them."""
        yield DagsterEvent.engine_event(
            plan_context, f"Executing steps in process (pid: {os.getpid()}), "
            f"{self.at_once} at once on threads",
            event_specific_data=EngineEventData.in_process(
                os.getpid(), execution_plan.step_keys_to_execute))
        yield from ExecuteRunWithPlanIterable(
            execution_plan=plan_context.execution_plan,
            iterator=partial(_threaded, at_once=self.at_once),
            execution_context_manager=PlanExecutionContextManager(
                job=plan_context.job, retry_mode=plan_context.retry_mode,
                execution_plan=plan_context.execution_plan,
                run_config=plan_context.run_config, dagster_run=plan_context.dagster_run,
                instance=plan_context.instance, raise_on_error=plan_context.raise_on_error,
                output_capture=plan_context.output_capture,
                step_dependency_config=self.step_dependency_config))


def _threaded(job_context: PlanExecutionContext, execution_plan: ExecutionPlan,
              at_once: int) -> Iterator[DagsterEvent]:
    """The plan's steps, up to `at_once` running on threads; their events are yielded, and
    handed to the plan's state, on this thread, in the order they arrive. Interrupted, it
    starts no more steps and raises once the running ones have ended."""
    compute_logs = job_context.instance.compute_log_manager
    step_keys = [step.key for step in execution_plan.get_steps_to_execute_in_topo_order()]
    events: queue.Queue[DagsterEvent | _Finished] = queue.Queue()
    running: dict[str, threading.Thread] = {}
    escaped: BaseException | None = None
    with InstanceConcurrencyContext(job_context.instance, job_context.dagster_run) as limits, \
            ActiveExecution(execution_plan, retry_mode=job_context.retry_mode,
                            max_concurrent=at_once,
                            tag_concurrency_limits=[{"key": HEAVY_TAG, "limit": 1}],
                            instance_concurrency_context=limits) as active:
        log_key = compute_logs.build_log_key_for_run(job_context.run_id,
                                                     create_compute_log_file_key())
        with compute_logs.capture_logs(log_key) as log_context:
            yield DagsterEvent.capture_logs(job_context, step_keys, log_key, log_context)
            stopping = False
            while running or not (stopping or active.is_complete):
                if not stopping and active.check_for_interrupts():
                    stopping = True
                    active.mark_interrupted()
                if not stopping:
                    for step in active.get_steps_to_execute(limit=at_once - len(running)):
                        context = job_context.for_step(step, active.get_known_state())
                        running[step.key] = threading.Thread(
                            target=_step, args=(step.key, context, events),
                            name=f"step {step.key}", daemon=True)
                        running[step.key].start()
                    yield from active.concurrency_event_iterator(job_context)
                if not running:
                    yield from active.plan_events_iterator(job_context)
                    active.sleep_til_ready()
                    continue
                item = events.get()
                if not isinstance(item, _Finished):
                    yield item
                    active.handle_event(item)
                    continue
                running.pop(item.key).join()
                if item.error is not None:
                    escaped, stopping = escaped or item.error, True
                    continue
                active.verify_complete(job_context, item.key)
                yield from active.plan_events_iterator(job_context)
            # Raised within: the plan's exit would otherwise say only that it did not complete.
            if escaped is not None:
                raise escaped
    if stopping:
        raise DagsterExecutionInterruptedError()


def _step(key: str, context: StepExecutionContext,
          events: "queue.Queue[DagsterEvent | _Finished]") -> None:
    """One step's events onto `events`, then its end."""
    try:
        for event in dagster_event_sequence_for_step(context):
            events.put(event)
    except BaseException:
        events.put(_Finished(key, sys.exc_info()[1]))
        return
    events.put(_Finished(key, None))
