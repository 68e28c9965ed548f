"""Which process runs or launched a run, so a run whose process died (a `flashrsi run`
killed mid-step, a run worker gone with it) is not taken for a running one: it would hold
back the round driver and take a place in the run queue's limits for ever.

Each run carries who answers for it: `PROCESS_TAG`, the process executing it (`flashrsi run`
for an in-process run; the run worker, tagged by the executor as it starts, for a queued
one); `LAUNCHER_TAG`, the process that submitted it, then the one that launched it (its code
server hosts the run worker, and both die with it); `HEARTBEAT_TAG`, the time the executing
process last said it lives (every `BEAT` seconds), for hosts whose pids mean nothing here."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections.abc import Iterator

import dagster as dg

from flashrsi_dagster import scratch
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.ready import ACTIVE

PROCESS_TAG = "flashrsi/process"
"""`<process space>:<pid>:<start time>` of the process a run runs in: the space
(`scratch.process_space`: host name, boot, pid namespace) says where its pid means something.
A `flashrsi run` in a container on the host network has the host's name but pids of its own."""
LAUNCHER_TAG = "flashrsi/launcher"
"""The same for the process that submitted the run, replaced by the one that dequeued it."""
HEARTBEAT_TAG = "flashrsi/heartbeat"
"""Unix time of the executing process's last beat."""
BEAT = 10
"""Seconds between beats."""
SILENT_FOR = 120
"""Seconds without a beat after which a run of another host is taken for dead (clocks of
the hosts sharing the instance may differ by less than a minute)."""
STARTING = (dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING)
_PR_SET_PDEATHSIG = 1


def this_process() -> dict[str, str]:
    return {PROCESS_TAG: identity(os.getpid())}


def identity(pid: int) -> str:
    return f"{scratch.process_space()}:{pid}:{scratch.start_time(pid)}"


def fail_dead_runs(
    instance: dg.DagsterInstance,
    name: str | None = None,
    silent_for: float | None = None,
    ending: str | None = None,
) -> list[str]:
    """Mark failed the active runs of experiment `name` (None: of every experiment) whose
    process has ended: judged by pid in this process space, by its heartbeat (none for
    `silent_for` seconds, default `SILENT_FOR`) elsewhere, or being `ending` (the `identity`
    of a process that is stopping); returns their run ids. Failed, a run frees its places in
    the run queue's limits. A queued run is left alone: whichever process dequeues next
    launches it."""
    dead = []
    tags = {} if name is None else {EXPERIMENT_TAG: name}
    for record in instance.get_run_records(filters=dg.RunsFilter(tags=tags, statuses=ACTIVE)):
        changed = record.update_timestamp.timestamp()
        why = why_dead(record.dagster_run, silent_for, ending, changed)
        if why is not None:
            instance.report_run_failed(record.dagster_run, why)
            dead.append(record.dagster_run.run_id)
    return dead


def why_dead(
    run: dg.DagsterRun,
    silent_for: float | None = None,
    ending: str | None = None,
    changed: float | None = None,
) -> str | None:
    """Why `run` cannot be running any more, or None while it may be. Of another process
    space, a run that never beat (launched there, its worker not started or not yet beating)
    is judged by when its record last `changed` (its launch, a tag): a host that died
    between launching a run and its worker's first beat leaves it STARTING for ever else."""
    if run.status == dg.DagsterRunStatus.QUEUED:
        return None
    owner = run.tags.get(PROCESS_TAG)
    if owner is None and (run.status in STARTING or run.status == dg.DagsterRunStatus.STARTED):
        owner = run.tags.get(LAUNCHER_TAG)  # not started yet, or not tagged yet by its worker
    if owner is None:
        return None
    if owner == ending:
        return "its process was stopped mid-run"
    space, _, process = owner.partition(":")
    pid, _, started = process.partition(":")
    if space == scratch.process_space() and pid.isdigit():
        if scratch.start_time(int(pid)) != started:  # gone, or its pid reused since
            return f"its process ({space}, pid {pid}) ended mid-run"
        return None
    beat = run.tags.get(HEARTBEAT_TAG, "")
    last = float(beat) if beat.replace(".", "", 1).isdigit() else changed
    silent = time.time() - last if last is not None else None
    bound = SILENT_FOR if silent_for is None else silent_for  # read now: a test may lower it
    if silent is not None and silent > bound:
        return f"its process ({space}, pid {pid}) sent no heartbeat for {silent:.0f} s"
    return None


def running_here(run: dg.DagsterRun) -> int | None:
    """The pid of the process executing `run` when it is a live process of this process
    space (its start time matches: not a pid reused since); None otherwise."""
    space, _, process = run.tags.get(PROCESS_TAG, "").partition(":")
    pid, _, started = process.partition(":")
    if space != scratch.process_space() or not pid.isdigit():
        return None
    return int(pid) if scratch.start_time(int(pid)) == started else None


def space_of(owner: str) -> str:
    """The process space of an `identity` (`<space>:<pid>:<start>`)."""
    return owner.partition(":")[0]


@contextlib.contextmanager
def beating(instance: dg.DagsterInstance, run_id: str, tag: bool = True) -> Iterator[None]:
    """Tag the run with this process (`tag`: not yet done) and its heartbeat, renewed every
    `BEAT` seconds while the block runs (a beat before the run exists is skipped)."""
    stop = threading.Event()

    def beat() -> None:
        while True:
            with contextlib.suppress(Exception):  # a missed beat is the next one's job
                instance.add_run_tags(run_id, {HEARTBEAT_TAG: f"{time.time():.0f}"})
            if stop.wait(BEAT):
                return

    if tag:
        instance.add_run_tags(run_id, this_process())
    thread = threading.Thread(target=beat, name="flashrsi-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


DRIVER_ENV = "FLASHRSI_DRIVER"
"""In a code server the driver starts (and so in its run workers): the driver's identity."""


def die_with_parent() -> None:
    """Have the kernel kill this process when its parent dies (`PR_SET_PDEATHSIG`): the code
    server and run workers of a `flashrsi run` end with it, even on SIGKILL. Linux only."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def die_with_driver() -> None:
    """In a run worker of a driver's code server: die with the server, and at once if the
    driver is already gone (it died before this process could ask)."""
    driver = os.environ.get(DRIVER_ENV)
    if not driver:
        return
    die_with_parent()
    space, _, process = driver.partition(":")
    pid, _, started = process.partition(":")
    if space == scratch.process_space() and scratch.start_time(int(pid)) != started:
        os._exit(1)
