"""Steps as queued runs, for `flashrsi run` when a round has several candidates ready: each a
run of its algorithm's job, submitted to the instance's run coordinator (Dagster's
`QueuedRunCoordinator` on a home's instance, whose tag concurrency limits decide when each
starts), launched by the instance's run launcher into a run worker of its own.

For as long as the driver needs them, this process hosts what `dagster dev` would: the code
location `flashrsi_dagster.definitions` (Dagster's own gRPC code server, its run workers
forked warm: `code_server.py`, started as a child in the folder holding the home) and the
queue's dequeue loop (`QueuedRunCoordinatorDaemon`, one iteration a second in a thread).
Nothing here schedules: Dagster's queue does.

Several hosts on one instance and one home: each driver launches only the queued runs that
a process of its own host submitted (the space of their `LAUNCHER_TAG`), or that no driver
did (the UI's, with no Dagster daemon), so each host's runs use its own cores. One iteration
at a time over the whole instance (the home's `dequeue.lock`, held for an iteration and its
launches): the limits are counted from the runs in progress, and two hosts counting at once
could both take the last place.

The code server and what it starts (run workers at any stage, their resource trackers) die
with this process, even on SIGKILL, at once: the server leads a process group that a reaper
kills when this process ends (`reaper.Group`). A killed driver leaves no process behind, and
its runs are marked failed by the next driver (`owner.fail_dead_runs`), which runs their steps
again (a step resumes from its records)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from flashrsi_dagster import scratch
from flashrsi_dagster.deployment.code_server import LOCATION, CodeServer
from flashrsi_dagster.deployment.execution import home_resources, home_run_config
from flashrsi_dagster.deployment.in_process import QUIET, REPOSITORY_LABEL
from flashrsi_dagster.deployment.reconnect import database_fault
from flashrsi_dagster.orchestration.dagster_internals import (
    RUN_KEY_TAG,
    GrpcServerTarget,
    JobSubsetSelector,
    QueuedRunCoordinator,
    QueuedRunCoordinatorDaemon,
    WorkspaceProcessContext,
)
from flashrsi_dagster.orchestration.owner import DRIVER_ENV, LAUNCHER_TAG, identity, space_of
from flashrsi_dagster.records.atomic import open_own

(REPOSITORY_TAG,) = REPOSITORY_LABEL
DEQUEUE_LOCK = "dequeue.lock"
DRAIN = 600.0
"""Seconds a driver whose experiment is done lets the runs its code server still executes end
(another experiment's steps, which this driver dequeued) before it stops them."""
DAEMON_GONE = 70
"""Seconds without a heartbeat (one every 30 s) after which Dagster's daemon is gone."""
ENDED = (
    dg.DagsterRunStatus.SUCCESS,
    dg.DagsterRunStatus.FAILURE,
    dg.DagsterRunStatus.CANCELED,
)


class QueuedRuns:
    """Submits run requests of the experiments under `home` to `instance`'s queue; the code
    server and the dequeue loop live from the first `submit` to `close`."""

    def __init__(self, instance: dg.DagsterInstance, home: Path, definitions: dg.Definitions):
        self.instance, self.home, self.definitions = instance, Path(home).resolve(), definitions
        self._workspace: WorkspaceProcessContext | None = None
        self._stop = threading.Event()
        self._dequeuing: threading.Thread | None = None
        self._server: CodeServer | None = None

    @property
    def available(self) -> bool:
        """Whether the instance has a run queue (Dagster's `QueuedRunCoordinator`)."""
        return isinstance(self.instance.run_coordinator, QueuedRunCoordinator)

    def submit(self, request: dg.RunRequest) -> str:
        """Create the request's run (its partition's tags, its run key) and submit it to
        the queue; returns its run id."""
        workspace = self._started()
        context = workspace.create_request_context()
        location = context.get_code_location(LOCATION)
        repository = next(iter(location.get_repositories().values()))
        assert request.job_name is not None
        remote = location.get_job(
            JobSubsetSelector(
                location_name=location.name,
                repository_name=repository.name,
                job_name=request.job_name,
                op_selection=None,
                asset_selection=request.asset_selection,
            )
        )
        job = self.definitions.resolve_job_def(request.job_name)
        resolved = request.with_resolved_tags_and_config(job, [], self.instance)
        run_config = {**QUIET, "resources": home_resources(self.home), **home_run_config(self.home)}
        plan = location.get_execution_plan(
            remote, run_config, step_keys_to_execute=None, known_state=None, instance=self.instance
        )
        run = self.instance.create_run(
            job_name=request.job_name,
            run_id=None,
            run_config=run_config,
            resolved_op_selection=remote.resolved_op_selection,
            step_keys_to_execute=None,
            status=dg.DagsterRunStatus.NOT_STARTED,
            op_selection=None,
            root_run_id=None,
            parent_run_id=None,
            tags={
                **(remote.run_tags or {}),
                **resolved.tags,
                REPOSITORY_TAG: f"{repository.name}@{location.name}",  # its job's Runs tab
                RUN_KEY_TAG: request.run_key or "",
                LAUNCHER_TAG: identity(os.getpid()),  # the dequeuer puts its own
            },
            job_snapshot=remote.job_snapshot,
            execution_plan_snapshot=plan.execution_plan_snapshot,
            parent_job_snapshot=remote.parent_job_snapshot,
            remote_job_origin=remote.get_remote_origin(),
            job_code_origin=remote.get_python_origin(),
            asset_selection=frozenset(request.asset_selection or ()) or None,
            asset_check_selection=None,
            asset_graph=repository.asset_graph,
        )
        self.instance.submit_run(run.run_id, context)
        return run.run_id

    def serve(self) -> None:
        """Host the code server and the dequeue loop (queued runs another driver left)."""
        self._started()

    def rehome(self, runs: list[dg.DagsterRun]) -> None:
        """Make this host the launcher of `runs` still queued that another host's driver
        submitted (this driver took their experiment over: that one has ended, and its host
        may be gone), between two dequeue iterations, so no host is launching one of them."""
        queued = dg.DagsterRunStatus.QUEUED
        theirs = [r.run_id for r in runs if r.status == queued and not this_hosts(r)]
        if not theirs:
            return
        with self._dequeue_lock(wait=True):
            still = self.instance.get_runs(filters=dg.RunsFilter(run_ids=theirs, statuses=[queued]))
            for run in still:
                self.instance.add_run_tags(run.run_id, {LAUNCHER_TAG: identity(os.getpid())})

    def cancel_queued(self, run_ids: set[str]) -> None:
        """Take the runs that have not started yet out of the queue."""
        if not run_ids:
            return
        queued = self.instance.get_runs(
            filters=dg.RunsFilter(run_ids=list(run_ids), statuses=[dg.DagsterRunStatus.QUEUED])
        )
        for run in queued:
            self.instance.run_coordinator.cancel_run(run.run_id)

    def close(self, *, stopped: bool = False) -> None:
        """Stop dequeuing and the code server; unless `stopped` (a stop signal), the runs it
        executes are let end first (`DRAIN`)."""
        self._stop.set()
        if self._dequeuing is not None:
            self._dequeuing.join()
        if self._workspace is not None:  # it manages no server: the one below is ours
            self._workspace.__exit__(None, None, None)
            self._workspace = None
        if self._server is not None:
            self._server.close(drain=0.0 if stopped else DRAIN)
            self._server = None

    def _started(self) -> WorkspaceProcessContext:
        if self._workspace is None:
            # its run workers learn who the driver is (`owner.die_with_driver`)
            env = {**os.environ, DRIVER_ENV: identity(os.getpid())}
            self._server = CodeServer(self.home, env)
            port = self._server.start()
            target = GrpcServerTarget(
                host="localhost", port=port, socket=None, location_name=LOCATION
            )
            self._workspace = WorkspaceProcessContext(self.instance, target)
            self._workspace.__enter__()
            if self.available:
                self._dequeuing = threading.Thread(target=self._dequeue, daemon=True)
                self._dequeuing.start()
        return self._workspace

    def _dequeue(self) -> None:
        assert self._workspace is not None
        interval = self.instance.run_coordinator.dequeue_interval_seconds  # type: ignore[attr-defined]
        with _Dequeuer(interval_seconds=interval) as daemon:
            daemon._logger.setLevel(logging.WARNING)  # its every look at the queue, at INFO
            while not self._stop.wait(interval):
                try:
                    if self._daemon_gone(daemon.daemon_type()):
                        with self._dequeue_lock() as held:
                            for _ in daemon.run_iteration(self._workspace) if held else ():
                                pass
                except Exception as exc:
                    if database_fault(exc) is None:
                        raise
                    # the next look at the queue tries again; the driver's own polling
                    # reports a database lost for good

    def _daemon_gone(self, daemon_type: str) -> bool:
        """Where Dagster's daemon runs (`flashrsi ui`, `dagster dev`), it dequeues every run
        on its own host; the drivers leave it alone, or a run could be launched twice."""
        beat = self.instance.get_daemon_heartbeats().get(daemon_type)
        return beat is None or time.time() - beat.timestamp > DAEMON_GONE

    @contextlib.contextmanager
    def _dequeue_lock(self, wait: bool = False) -> Iterator[bool]:
        """The home's dequeue lock for one iteration: yields whether it was taken (another
        driver, of any host sharing the home, may hold it: unless `wait`, the next look
        tries again)."""
        path = self.home / ".dagster" / DEQUEUE_LOCK
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_own(path, os.O_RDWR | os.O_CREAT)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # releases the flock


class _Dequeuer(QueuedRunCoordinatorDaemon):
    """Dagster's dequeue loop over this host's queued runs (`_ThisHostsQueue`), tagging each
    run it launches with this process (whose code server will host the run's worker), so a
    later driver can tell a run whose launcher died before its worker started
    (`owner.why_dead`)."""

    def _get_runs_to_dequeue(self, instance, concurrency_config, fixed_iteration_time):
        return super()._get_runs_to_dequeue(
            _ThisHostsQueue(instance), concurrency_config, fixed_iteration_time
        )

    def _dequeue_run(self, instance, workspace, run, concurrency_config, fixed_iteration_time):
        current = instance.get_run_by_id(run.run_id)
        if current is not None and current.status == dg.DagsterRunStatus.QUEUED:
            instance.add_run_tags(run.run_id, {LAUNCHER_TAG: identity(os.getpid())})
        return super()._dequeue_run(
            instance, workspace, run, concurrency_config, fixed_iteration_time
        )


class _ThisHostsQueue:
    """The instance as Dagster's dequeue loop sees it: every run in progress counts against
    the limits, but the queue holds only the runs this host may launch (`this_hosts`)."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        self._instance = instance

    def __getattr__(self, name: str):
        return getattr(self._instance, name)

    def get_runs(self, filters=None, cursor=None, limit=None, **kwargs):
        if filters is None or list(filters.statuses) != [dg.DagsterRunStatus.QUEUED]:
            return self._instance.get_runs(filters, cursor, limit, **kwargs)
        # every page at once: a page with none of this host's would end Dagster's paging
        queued = self._instance.get_runs(filters, cursor, None, **kwargs)
        return [run for run in queued if this_hosts(run)]


def this_hosts(run: dg.DagsterRun) -> bool:
    """Whether a queued run is this host's to launch: submitted (or last re-homed, by the
    driver that took its experiment over) by a process of this process space, or by none
    (the UI's, a sensor's)."""
    launcher = run.tags.get(LAUNCHER_TAG)
    return launcher is None or space_of(launcher) == scratch.process_space()
