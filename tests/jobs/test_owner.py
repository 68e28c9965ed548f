"""A run whose process died mid-run is marked failed when the experiment is driven again; a
run whose process lives, or one of another host, is left alone."""

from __future__ import annotations

import socket
import subprocess
import sys

import dagster as dg

from flashrsi_dagster import scratch
from flashrsi_dagster.assets.context import EXPERIMENT_TAG
from flashrsi_dagster.jobs.owner import PROCESS_TAG, fail_dead_runs, this_process


def _started_run(instance: dg.DagsterInstance, process: str) -> str:
    run = dg.DagsterRun(
        job_name="meta_harness",
        status=dg.DagsterRunStatus.STARTED,
        tags={EXPERIMENT_TAG: "exp", PROCESS_TAG: process},
    )
    return instance.add_run(run).run_id


def test_only_the_runs_of_ended_processes_on_this_host_are_marked_failed():
    ended = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    process = f"{socket.gethostname()}:{ended.pid}:{scratch.start_time(ended.pid)}"
    ended.kill()
    ended.wait()
    with dg.instance_for_test() as instance:
        dead = _started_run(instance, process)
        alive = _started_run(instance, this_process()[PROCESS_TAG])
        elsewhere = _started_run(instance, f"other-host:{ended.pid}:1")

        assert fail_dead_runs(instance, "exp") == [dead]
        status = {r.run_id: r.status for r in instance.get_runs()}
        assert status[dead] == dg.DagsterRunStatus.FAILURE
        assert status[alive] == status[elsewhere] == dg.DagsterRunStatus.STARTED
        assert fail_dead_runs(instance, "other") == []
