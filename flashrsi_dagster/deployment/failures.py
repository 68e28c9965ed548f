"""Why a step's run failed, from its step-failure events, however the run was executed (in
this process, or by a run worker the queue launched), in one line: a lost database connection
as the line `reconnect.py` wrote, not the traceback around it."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from flashrsi_dagster.deployment.reconnect import fault_line
from flashrsi_dagster.records import IntegrityError


def raise_integrity_failure(failures: Sequence[dg.DagsterEvent]) -> None:
    """A step refused because the records fail their integrity check raises that
    `IntegrityError` here, so the caller can name the files instead of pointing at a run."""
    for event in failures:
        error = event.step_failure_data.error
        while error is not None:
            if error.cls_name == IntegrityError.__name__:
                raise IntegrityError.from_message(error.message)
            error = error.cause


def root_cause(failures: Sequence[dg.DagsterEvent]) -> str:
    """The innermost error of the first failed step (a Dagster trace wraps the real one)."""
    for event in failures:
        error = event.step_failure_data.error
        user = event.step_failure_data.user_failure_data
        if user is not None and user.description:
            return user.description
        while error is not None and error.cause is not None:
            error = error.cause
        if error is not None:
            return _one_line(error)
    return "the run failed before any step (see `flashrsi ui`)"


def _one_line(error) -> str:
    return fault_line(error.message, error.cls_name) or f"{error.cls_name}: {error.message.strip()}"


def step_failures(instance: dg.DagsterInstance, run_id: str) -> list[dg.DagsterEvent]:
    """The step-failure events of a run, from the instance's event log."""
    entries = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    return [e.dagster_event for e in entries if e.dagster_event is not None]


GENERIC = "This run has been marked as failed from outside the execution context."
"""What Dagster writes when a run worker fails outside any step; its engine event says why."""


def run_failure(instance: dg.DagsterInstance, run_id: str) -> str | None:
    """Why a run failed that failed before any step (its worker never started, say): the
    message of its run-failure event, or where that is Dagster's `GENERIC`, the error its
    run worker reported (as when it lost its database connection)."""
    entries = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    message = entries[-1].message if entries else None
    if message is not None and message != GENERIC:
        return fault_line(message) or message
    return _engine_error(instance, run_id) or message


def _engine_error(instance: dg.DagsterInstance, run_id: str) -> str | None:
    for entry in reversed(instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)):
        data = entry.dagster_event.event_specific_data if entry.dagster_event else None
        error = getattr(data, "error", None)
        if error is not None:
            while error.cause is not None:
                error = error.cause
            return _one_line(error)
    return None
