"""Which process runs an in-process run, so a run whose process died (a `flashrsi run` killed
mid-step) is not taken for a running one: it would hold back the round driver and take a place
in the run queue's limits for ever. Runs the queue launched have run workers of their own."""

from __future__ import annotations

import os

import dagster as dg

from flashrsi_dagster import scratch
from flashrsi_dagster.assets.context import EXPERIMENT_TAG
from flashrsi_dagster.defs.ready import ACTIVE

PROCESS_TAG = "flashrsi/process"
"""`<process space>:<pid>:<start time>` of the process an in-process run runs in: the space
(`scratch.process_space`: host name, boot, pid namespace) says where its pid means something.
A `flashrsi run` in a container on the host network has the host's name but pids of its own."""


def this_process() -> dict[str, str]:
    pid = os.getpid()
    return {PROCESS_TAG: f"{scratch.process_space()}:{pid}:{scratch.start_time(pid)}"}


def fail_dead_runs(instance: dg.DagsterInstance, name: str) -> list[str]:
    """Mark failed the experiment's active in-process runs whose process, in this process
    space, has ended; returns their run ids. Another host's runs, or another pid namespace's
    (a container's), are left alone: their process cannot be seen from here."""
    here, dead = scratch.process_space(), []
    for run in instance.get_runs(
        filters=dg.RunsFilter(tags={EXPERIMENT_TAG: name}, statuses=ACTIVE)
    ):
        space, _, process = run.tags.get(PROCESS_TAG, "").partition(":")
        pid, _, started = process.partition(":")
        if space != here or not pid.isdigit():
            continue
        if scratch.start_time(int(pid)) != started:  # gone, or its pid reused since
            instance.report_run_failed(run, f"its process ({space}, pid {pid}) ended mid-run")
            dead.append(run.run_id)
    return dead
