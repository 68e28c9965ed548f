"""A run whose process died mid-run is marked failed when the experiment is driven again; a
run whose process lives, or one of another host or pid namespace, is left alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import dagster as dg
import pytest

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
    process = f"{scratch.process_space()}:{ended.pid}:{scratch.start_time(ended.pid)}"
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


IN_ITS_OWN_PID_NAMESPACE = """
import sys, time
from flashrsi_dagster.jobs.owner import PROCESS_TAG, this_process
print(this_process()[PROCESS_TAG], flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a pid namespace of its own needs root and util-linux's unshare",
)
def test_a_live_run_in_another_pid_namespace_of_this_host_is_not_marked_failed():
    """A `flashrsi run` in a container on the host network: the host's name, its own pids (it
    is pid 1 there). Judged by the host's pids, it would be taken for a dead process."""
    argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c"]
    contained = subprocess.Popen(
        [*argv, IN_ITS_OWN_PID_NAMESPACE], stdout=subprocess.PIPE, text=True
    )
    try:
        assert contained.stdout is not None
        process = contained.stdout.readline().strip()
        assert process.split(":")[1] == "1"  # its pid where it runs
        with dg.instance_for_test() as instance:
            live = _started_run(instance, process)

            assert fail_dead_runs(instance, "exp") == []
            (run,) = instance.get_runs()
            assert run.run_id == live and run.status == dg.DagsterRunStatus.STARTED
    finally:
        contained.kill()
        contained.wait()
