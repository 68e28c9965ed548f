"""Which process runs an in-process run, so a run whose process died (a `flashrsi run` killed
mid-step) is not taken for a running one: it would hold back the round driver and take a place
in the run queue's limits for ever. Runs the queue launched have run workers of their own."""

from __future__ import annotations

import os
import socket

import dagster as dg

from flashrsi_dagster import scratch
from flashrsi_dagster.assets.context import EXPERIMENT_TAG
from flashrsi_dagster.defs.ready import ACTIVE

PROCESS_TAG = "flashrsi/process"
"""`<host>:<pid>:<start time>` of the process an in-process run runs in."""


def this_process() -> dict[str, str]:
    pid = os.getpid()
    return {PROCESS_TAG: f"{socket.gethostname()}:{pid}:{scratch.start_time(pid)}"}


def fail_dead_runs(instance: dg.DagsterInstance, name: str) -> list[str]:
    """Mark failed the experiment's active in-process runs whose process, on this host, has
    ended; returns their run ids. Another host's runs are left alone: their process cannot
    be seen from here."""
    dead = []
    for run in instance.get_runs(
        filters=dg.RunsFilter(tags={EXPERIMENT_TAG: name}, statuses=ACTIVE)
    ):
        host, _, process = run.tags.get(PROCESS_TAG, "").partition(":")
        pid, _, started = process.partition(":")
        if host != socket.gethostname() or not pid.isdigit():
            continue
        if scratch.start_time(int(pid)) != started:  # gone, or its pid reused since
            instance.report_run_failed(run, f"its process ({host}, pid {pid}) ended mid-run")
            dead.append(run.run_id)
    return dead
