"""A run whose process died mid-run is marked failed when the experiment is driven again; a
run whose process lives, or one of another host or pid namespace that still beats, is left
alone; a wait on runs that show no sign of life ends, naming them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import dagster as dg
import pytest

from flashrsi_dagster import scratch
from flashrsi_dagster.deployment.waiting import Stalled, Watch
from flashrsi_dagster.orchestration import owner
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.owner import (
    HEARTBEAT_TAG,
    LAUNCHER_TAG,
    PROCESS_TAG,
    SILENT_FOR,
    beating,
    fail_dead_runs,
    identity,
    this_process,
)
from tests.conftest import wait_until


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
from flashrsi_dagster.orchestration.owner import PROCESS_TAG, this_process
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


def _run(instance: dg.DagsterInstance, status: dg.DagsterRunStatus, **tags: str) -> str:
    run = dg.DagsterRun(job_name="modular_rsi", status=status, tags={EXPERIMENT_TAG: "exp", **tags})
    return instance.add_run(run).run_id


def test_the_runs_a_killed_driver_launched_are_failed():
    """SIGKILL of `flashrsi run` while a round's candidates are queued, starting or just
    started: each run names the process that launched it (its code server and run workers
    die with it), so the runs of the dead launcher are failed, unless their worker is
    known and alive. (A queued run is left for the next dequeuer: test_kill_resume.py.)"""
    ended = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    launcher = identity(ended.pid)
    ended.kill()
    ended.wait()
    with dg.instance_for_test() as instance:
        starting = _run(instance, dg.DagsterRunStatus.STARTING, **{LAUNCHER_TAG: launcher})
        started = _run(instance, dg.DagsterRunStatus.STARTED, **{LAUNCHER_TAG: launcher})
        worker_alive = _run(
            instance,
            dg.DagsterRunStatus.STARTED,
            **{LAUNCHER_TAG: launcher, **this_process()},  # its worker lives on: it is judged
        )

        assert sorted(fail_dead_runs(instance, "exp")) == sorted([starting, started])
        status = {r.run_id: r.status for r in instance.get_runs()}
        assert status[worker_alive] == dg.DagsterRunStatus.STARTED


def test_a_run_of_another_host_is_failed_once_its_heartbeat_stops():
    """A run worker on another host sharing the instance: its pid means nothing here, its
    heartbeat does."""
    now = time.time()
    with dg.instance_for_test() as instance:
        beating_run = _run(
            instance,
            dg.DagsterRunStatus.STARTED,
            **{PROCESS_TAG: "other-host.1:42:7", HEARTBEAT_TAG: f"{now - 5:.0f}"},
        )
        silent = _run(
            instance,
            dg.DagsterRunStatus.STARTED,
            **{PROCESS_TAG: "other-host.1:43:7", HEARTBEAT_TAG: f"{now - SILENT_FOR - 60:.0f}"},
        )
        never_beat = _run(instance, dg.DagsterRunStatus.STARTED, **{PROCESS_TAG: "other:44:7"})

        assert fail_dead_runs(instance, "exp") == [silent]
        alive = {beating_run, never_beat}
        assert {r.run_id for r in instance.get_runs() if not r.is_finished} == alive


def test_the_bound_on_silence_is_read_when_a_run_is_judged(monkeypatch):
    """`SILENT_FOR` is read at each judgement, not fixed at import: a process may lower it
    before it judges (`tests/deployment/test_several_hosts.py`'s resume does)."""
    now = time.time()
    with dg.instance_for_test() as instance:
        quiet = _run(
            instance,
            dg.DagsterRunStatus.STARTED,
            **{PROCESS_TAG: "other-host.1:42:7", HEARTBEAT_TAG: f"{now - 60:.0f}"},
        )
        assert fail_dead_runs(instance, "exp") == []  # 60 s: within the default bound
        monkeypatch.setattr(owner, "SILENT_FOR", 30)
        assert fail_dead_runs(instance, "exp") == [quiet]


def test_a_run_another_host_launched_is_failed_if_it_never_beat_since_its_launch():
    """A host that died between launching a run and its worker's first beat: the run is
    STARTING, named only by its launcher, with no heartbeat; it is judged by when its record
    last changed (here: any time ago is too long), or it would hold its places for ever."""
    with dg.instance_for_test() as instance:
        starting = _run(
            instance, dg.DagsterRunStatus.STARTING, **{LAUNCHER_TAG: "other-host.1:42:7"}
        )
        assert fail_dead_runs(instance, "exp") == []  # just launched: it may start yet
        assert fail_dead_runs(instance, "exp", silent_for=-1) == [starting]


def test_the_executor_tags_the_run_with_its_process_and_a_heartbeat(tmp_path):
    """What lets a later driver judge a queued run: its worker's process and heartbeat."""
    with dg.instance_for_test() as instance:
        run_id = _run(instance, dg.DagsterRunStatus.STARTED)
        with beating(instance, run_id):
            wait_until(
                lambda: HEARTBEAT_TAG in instance.get_run_by_id(run_id).tags, "the first heartbeat"
            )
        tags = instance.get_run_by_id(run_id).tags
        assert tags[PROCESS_TAG] == this_process()[PROCESS_TAG]
        # generous bound: a heartbeat is a time stamp of now, not a measured duration
        assert abs(float(tags[HEARTBEAT_TAG]) - time.time()) < 3600


def test_a_wait_without_a_sign_of_life_ends_naming_the_runs():
    """`flashrsi resume` never waits silently or for ever: it says which runs it waits for
    and in which state, and gives up with their ids when none shows a sign of life."""
    said = []
    with dg.instance_for_test() as instance:
        elsewhere = _run(instance, dg.DagsterRunStatus.STARTING, **{LAUNCHER_TAG: "other:9:9"})
        watch = Watch(instance, "exp", said.append, limit=2)
        with pytest.raises(Stalled) as stalled:
            watch.until_one_ends({elsewhere}, set(), lambda _: "branch (round 0, tool_use)")

    assert said == [f"   waiting for run {elsewhere} (STARTING): branch (round 0, tool_use)"]
    assert f"run {elsewhere} (STARTING, branch (round 0, tool_use))" in str(stalled.value)
    assert "gave up waiting after 2 s" in str(stalled.value)
