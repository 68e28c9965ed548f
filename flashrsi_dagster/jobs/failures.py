"""Why a step's run failed, from its step-failure events, however the run was executed (in
this process, or by a run worker the queue launched)."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

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
            return f"{error.cls_name}: {error.message.strip()}"
    return "the run failed before any step (see `flashrsi ui`)"


def step_failures(instance: dg.DagsterInstance, run_id: str) -> list[dg.DagsterEvent]:
    """The step-failure events of a run, from the instance's event log."""
    entries = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    return [e.dagster_event for e in entries if e.dagster_event is not None]


def run_failure(instance: dg.DagsterInstance, run_id: str) -> str | None:
    """Why a run failed that failed before any step (its worker never started, say): the
    message of its run-failure event."""
    entries = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    return entries[-1].message if entries else None
