"""Which of an experiment's ready steps to request now, given its active runs: the one rule
the round driver sensor and `flashrsi run` share."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.orchestration.dagster_internals import PARTITION_NAME_TAG, RUN_KEY_TAG

ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,  # its process still runs (its jails, its last writes)
    dg.DagsterRunStatus.SUSPENDED,  # it resumes where it stopped
]
"""A run in one of these states may still write the experiment's records."""


def not_active(ready: list[dg.RunRequest], active: list[dg.DagsterRun]) -> list[dg.RunRequest]:
    """The ready steps' requests that have no active run, each once; none while a run is
    active that does none of them (it may change what comes next). A run does a step if it
    carries the step's run key or, for a candidate, the step's partition (a UI launch)."""
    keys = {r.run_key for r in ready}
    partitions = {str(r.partition_key) for r in ready if r.partition_key is not None}

    def step_of(run: dg.DagsterRun) -> str | None:
        if run.tags.get(RUN_KEY_TAG) in keys:
            return run.tags[RUN_KEY_TAG]
        partition = run.tags.get(PARTITION_NAME_TAG)
        return partition if partition in partitions and "|" in partition else None

    doing = [step_of(run) for run in active]
    if None in doing:
        return []
    wanted = {r.run_key: r for r in ready if r.run_key not in doing}
    return [r for r in wanted.values() if str(r.partition_key) not in doing]
