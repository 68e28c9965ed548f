"""Several hosts on one instance: each driver's dequeue loop launches only the queued runs its
own host submitted (or that no driver did), while every run in progress, of any host, counts
against the limits; a driver taking over an experiment becomes the launcher of the runs
another host's driver left queued."""

from __future__ import annotations

import os

import dagster as dg
import yaml
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteRepositoryOrigin

from flashrsi_dagster.deployment.code_server import LOCATION
from flashrsi_dagster.deployment.queued import QueuedRuns, _Dequeuer
from flashrsi_dagster.deployment.run_queue import RunLimits, run_queue
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.owner import LAUNCHER_TAG, identity

ELSEWHERE = "other-host.1:42:7"
"""A process of another host (its pid means nothing here)."""


def _queue(limits: RunLimits) -> dict:
    """A home's run queue section with these limits, as instance overrides."""
    return yaml.safe_load(run_queue(limits))


def _run(instance, status, **tags) -> str:
    location = RegisteredCodeLocationOrigin(LOCATION)
    origin = RemoteRepositoryOrigin(location, "__repository__").get_job_origin("meta_harness")
    run = dg.DagsterRun(
        job_name="meta_harness",
        status=status,
        tags={EXPERIMENT_TAG: "e", **tags},
        remote_job_origin=origin,  # what a queued run carries
    )
    return instance.add_run(run).run_id


def _to_dequeue(instance: dg.DagsterInstance) -> list[str]:
    with _Dequeuer(interval_seconds=1) as daemon:
        config = instance.get_concurrency_config()
        return [r.run_id for r in daemon._get_runs_to_dequeue(instance, config, None)]


def test_a_host_dequeues_its_own_and_unclaimed_runs_never_another_hosts():
    overrides = _queue(RunLimits(max_concurrent_runs=8, per_experiment=8))
    with dg.instance_for_test(overrides=overrides) as instance:
        queued = dg.DagsterRunStatus.QUEUED
        elsewhere = _run(instance, queued, **{LAUNCHER_TAG: ELSEWHERE})
        own = _run(instance, queued, **{LAUNCHER_TAG: identity(os.getpid())})
        unclaimed = _run(instance, queued)  # the UI's, say

        assert sorted(_to_dequeue(instance)) == sorted([own, unclaimed])
        assert elsewhere not in _to_dequeue(instance)


def test_another_hosts_runs_in_progress_count_against_the_limits():
    overrides = _queue(RunLimits(max_concurrent_runs=2, per_experiment=2))
    with dg.instance_for_test(overrides=overrides) as instance:
        _run(instance, dg.DagsterRunStatus.STARTED, **{LAUNCHER_TAG: ELSEWHERE})
        first = _run(instance, dg.DagsterRunStatus.QUEUED, **{LAUNCHER_TAG: identity(os.getpid())})
        _run(instance, dg.DagsterRunStatus.QUEUED, **{LAUNCHER_TAG: identity(os.getpid())})

        assert _to_dequeue(instance) == [first]  # one place left of two


def test_a_driver_taking_over_becomes_the_launcher_of_the_runs_another_host_left_queued(
    tmp_path,
):
    overrides = _queue(RunLimits())
    with dg.instance_for_test(overrides=overrides) as instance:
        queued = _run(instance, dg.DagsterRunStatus.QUEUED, **{LAUNCHER_TAG: ELSEWHERE})
        started = _run(instance, dg.DagsterRunStatus.STARTED, **{LAUNCHER_TAG: ELSEWHERE})
        runs = QueuedRuns(instance, tmp_path / "home", dg.Definitions())

        runs.rehome(instance.get_runs())

        tags = {r.run_id: r.tags[LAUNCHER_TAG] for r in instance.get_runs()}
        assert tags[queued] == identity(os.getpid())
        assert tags[started] == ELSEWHERE  # judged by its heartbeat, not taken over
        assert _to_dequeue(instance) == [queued]
