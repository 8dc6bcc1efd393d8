"""The executor chosen by the environment, and its settings refused when out of bounds."""

import dagster as dg
import pytest
from dagster_celery import core_execution_loop

from pipelines.resources import executor, poll_seconds
from pipelines.threads import threads_executor


def test_the_default_executor_runs_steps_on_threads_of_the_runs_process(monkeypatch) -> None:
    monkeypatch.delenv("CHAINTAPE_EXECUTOR", raising=False)
    assert executor() is threads_executor
    monkeypatch.setenv("CHAINTAPE_EXECUTOR", "in_process")
    assert executor() is dg.in_process_executor


def test_a_celery_run_looks_for_finished_steps_as_often_as_configured(monkeypatch) -> None:
    monkeypatch.setattr(core_execution_loop, "TICK_SECONDS", core_execution_loop.TICK_SECONDS)
    monkeypatch.setenv("CHAINTAPE_EXECUTOR", "celery")
    monkeypatch.setenv("CHAINTAPE_CELERY_POLL_SECONDS", "0.2")
    assert executor().name == "celery"
    assert core_execution_loop.TICK_SECONDS == 0.2
    monkeypatch.delenv("CHAINTAPE_CELERY_POLL_SECONDS")
    assert poll_seconds() == 0.05


@pytest.mark.parametrize("value", ["soon", "0", "-1", "61", "nan"])
def test_a_poll_interval_out_of_bounds_is_refused_by_name(monkeypatch, value) -> None:
    monkeypatch.setenv("CHAINTAPE_CELERY_POLL_SECONDS", value)
    with pytest.raises(ValueError, match=f"CHAINTAPE_CELERY_POLL_SECONDS='{value}'"):
        poll_seconds()


def test_an_unknown_executor_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setenv("CHAINTAPE_EXECUTOR", "processes")
    with pytest.raises(ValueError, match="CHAINTAPE_EXECUTOR='processes'"):
        executor()
