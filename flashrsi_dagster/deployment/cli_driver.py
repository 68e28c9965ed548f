"""`flashrsi run` / `resume`: a whole experiment through Dagster against the persistent
instance under the experiment home, so `flashrsi ui` shows it afterwards: a step ready alone
runs in-process, a round's candidates ready together go through the instance's run queue (every
step does where the instance's run launcher puts runs elsewhere: a container, say)."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.base import Step, StepOrderError
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.controls.lift import control_lines
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import ledger_lines
from flashrsi_dagster.deployment.failures import (
    raise_integrity_failure,
    root_cause,
    run_failure,
    step_failures,
)
from flashrsi_dagster.deployment.in_process import InProcessRuns
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.deployment.postgres import shown
from flashrsi_dagster.deployment.queued import DAEMON_GONE, QueuedRuns
from flashrsi_dagster.deployment.reconnect import (
    DatabaseLost,
    database_fault,
    fault_line,
    may_reconnect,
)
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.deployment.waiting import WAIT_LIMIT, Watch
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.experiment.lock import DriverBusy, driving
from flashrsi_dagster.lifecycle import raise_if_stopped, release_interrupted, stop_received
from flashrsi_dagster.orchestration.algorithm_defs import defs_for, run_key, step_of
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.dagster_internals import (
    RUN_KEY_TAG,
    InstigatorStatus,
    InstigatorType,
    TickStatus,
)
from flashrsi_dagster.orchestration.owner import fail_dead_runs, identity, this_process
from flashrsi_dagster.orchestration.ready import ACTIVE, not_active
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from flashrsi_dagster.orchestration.tags import endpoint_tags
from flashrsi_dagster.validation import one_line

Say = Callable[[str], None]
RERUNS = 3
"""Times a step whose run lost its database connection is run again (`_Driver._again`)."""


def drive(experiment: Experiment, say: Say = print, only: tuple[str, ...] | None = None):
    """Run every remaining step of the experiment as Dagster runs on the persistent instance
    under its home (`only`: just the steps with these actions, refusing when another comes
    first); returns the final state. A database connection lost for good (`reconnect.py`
    retried it) is a `DatabaseLost` saying so in one line."""
    instance = persistent_instance(Path(experiment.config.experiment.home))
    try:
        return drive_on(instance, experiment, say, only)
    except Exception as exc:
        if isinstance(exc, RuntimeError) or (fault := _database_fault(instance, exc)) is None:
            raise
        raise DatabaseLost(fault) from None
    finally:
        instance.dispose()


def _database_fault(instance: dg.DagsterInstance, exc: Exception) -> str | None:
    url = getattr(instance.run_storage, "postgres_url", None)
    return database_fault(exc, shown(url) if url else "")


def drive_on(
    instance: dg.DagsterInstance,
    experiment: Experiment,
    say: Say = print,
    only: tuple[str, ...] | None = None,
    wait_limit: float = WAIT_LIMIT,
):
    """Run every remaining step as Dagster runs on `instance`: a step that is ready alone,
    while no other run is active on the instance, in-process; several ready at once (a
    round's candidates), or any step while other runs are active, as separate runs through
    the instance's run queue, whose limits decide how many run at once (`queued.py`). An
    instance without a run queue (no limits to keep) has them run in-process, one by one.
    A resumed experiment whose records fail the integrity check is refused before any step
    (`IntegrityError`, naming the files); a failed run stops the driver with its root cause,
    once the experiment's other runs have ended. Runs of a process that died are marked
    failed and their steps run again; runs it left queued are dequeued here and waited for;
    a wait without a sign of life for `wait_limit` seconds ends with `Stalled`."""
    experiment.records.verify()
    with driving(experiment.paths.root):
        _refuse_beside_the_sensor(instance, experiment.config.experiment.name, say)
        return _drive_held(instance, experiment, say, only, wait_limit)


def _refuse_beside_the_sensor(instance: dg.DagsterInstance, name: str, say: Say) -> None:
    """One driver per experiment: where the round driver sensor runs (on, its daemon alive),
    it drives; this process would race it. The sensor is on by default: it is off only where
    it was turned off in the UI (a stored state, none of it running). Checked with the driver
    lock held, which the sensor respects, so a sensor turned on later leaves this experiment
    alone; a tick it began before (turned off while it ran) is waited for, its runs then
    adopted as this driver's."""
    states = [
        s
        for s in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
        if s.instigator_name == round_driver.name
    ]
    on = not states or any(s.status in _ON for s in states)
    beat = instance.get_daemon_heartbeats().get("SENSOR")
    alive = beat is not None and time.time() - beat.timestamp < DAEMON_GONE
    if alive and on:
        raise DriverBusy(
            f"experiment {name!r}: the {round_driver.name} sensor is on and its daemon runs: "
            "it drives this home's experiments (watch them in `flashrsi ui`); stop the "
            "sensor there (Automation tab) to drive from the command line"
        )
    if alive:
        _await_ticks(instance, states, name, say)


TICK_WAIT = 120.0
"""Seconds a driver waits for a round driver tick in flight as it starts (a tick of many
experiments takes seconds); past it, it is refused rather than racing the tick."""


def _await_ticks(instance: dg.DagsterInstance, states: list, name: str, say: Say) -> None:
    """Waits for the sensor's ticks in flight: one that read this experiment before the
    driver lock was taken submits its runs when it ends (Dagster records a tick before it
    evaluates, so a tick not recorded yet will find the lock)."""

    def in_flight() -> bool:
        return any(
            tick.status == TickStatus.STARTED
            for s in states
            for tick in instance.get_ticks(s.instigator_origin_id, s.selector_id, limit=1)
        )

    deadline = time.monotonic() + TICK_WAIT
    if in_flight():
        say(f"   waiting for the {round_driver.name} sensor's tick in flight to end")
    while in_flight():
        if time.monotonic() > deadline:
            raise DriverBusy(
                f"experiment {name!r}: a tick of the {round_driver.name} sensor, turned off "
                f"while it ran, has not ended in {TICK_WAIT:.0f} s; run again once it has"
            )
        time.sleep(0.2)


_ON = {InstigatorStatus.RUNNING, InstigatorStatus.DECLARED_IN_CODE}


def _drive_held(instance, experiment, say, only, wait_limit):
    config = experiment.config
    home, name = str(config.experiment.home), config.experiment.name
    runs = InProcessRuns(instance, home)
    queued = QueuedRuns(instance, Path(home), runs.definitions)
    driver = _Driver(instance, experiment, runs, queued, Watch(instance, name, say, wait_limit))
    stopped = False
    try:
        driver.defs.register(instance, name, driver.experiments.algorithm(name))
        for run_id in fail_dead_runs(instance, name):
            say(f"   run {run_id} of a process that ended is marked failed")
        while not driver.complete(ready := driver.experiments.ready_steps(name)):
            raise_if_stopped()  # one an in-process run swallowed: no further step
            _check_order(ready[0], only, name)
            driver.advance(ready)
        return driver.experiments.algorithm(name).read_state()
    except KeyboardInterrupt:  # a stop signal (`lifecycle.Stopped`) or Ctrl-C
        stopped = True
        raise
    finally:
        # a stop signal the in-process run swallowed (its run failed) stops this driver too
        stopped = stopped or stop_received() is not None
        if stopped:
            release_interrupted(sys.exc_info()[1])
        driver.close(stopped)  # on a stop: its code server's run workers interrupted, ended
        if stopped:
            _fail_stopped_runs(instance, name, say)


STOP_TRIES = 3
"""Attempts at marking the runs a stop left active failed: SQLite refuses a write while
another process holds its lock ("database is locked", after its 5 s busy timeout), as the
interrupted run workers do while they record their end."""


def _fail_stopped_runs(instance: dg.DagsterInstance, name: str, say: Say) -> None:
    """Mark failed what this driver, or its interrupted run workers, left active, so the next
    driver finds nothing started. Never raises: the stop is what the command reports, and a
    run left active here is failed by the next driver (its process is gone by then)."""
    for attempt in range(1, STOP_TRIES + 1):
        try:
            for run_id in fail_dead_runs(instance, name, ending=identity(os.getpid())):
                say(f"   run {run_id}, stopped with this driver, is marked failed")
            return
        except Exception as exc:  # said, and left for the next driver
            if attempt == STOP_TRIES:
                say(f"   runs stopped with this driver not marked failed: {one_line(exc)}")
                return
            time.sleep(0.5 * attempt)


def _check_order(step: Step, only: tuple[str, ...] | None, name: str) -> None:
    if only is not None and step.action not in only:
        raise StepOrderError(
            f"{'/'.join(only)} refused: {step.describe()} comes first; "
            f"`flashrsi resume --experiment {name}` runs every remaining step"
        )


class _Driver:
    """One experiment's runs: in-process, or queued with the run ids it submitted."""

    def __init__(self, instance, experiment, runs, queued, watch: Watch) -> None:
        config = experiment.config
        self.instance, self.runs, self.queued, self.watch = instance, runs, queued, watch
        self.say = watch.say
        self.name, self.algorithm = config.experiment.name, config.algorithm.name
        self.defs = defs_for(self.algorithm)
        self.experiments = ExperimentsResource.at(str(config.experiment.home))
        self.tags = endpoint_tags(config, Path(config.experiment.home))
        self.submitted: dict[str, Step] = {}
        self.mine: set[str] = set()  # submitted by this process (not reported while waiting)
        self.reruns: Counter[Step] = Counter()

    def complete(self, ready: tuple[Step, ...]) -> bool:
        """Whether the experiment is finished, once every step done has its run's assets.
        A run that failed (its process killed, say) after its step's records were complete
        left the step done but its partition's later assets unstored: such a step, not ready
        again and never run with success, is run again here; it reads its records back."""
        keys = {run_key(self.name, s) for s in ready}
        failed = self.instance.get_runs(
            filters=dg.RunsFilter(
                tags={EXPERIMENT_TAG: self.name}, statuses=[dg.DagsterRunStatus.FAILURE]
            )
        )
        for key in sorted({r.tags.get(RUN_KEY_TAG, "") for r in failed} - keys):
            step = step_of(self.name, key)
            if step is not None and not self._run_of(key):
                self._in_process(step)
        return ready[0].finished

    def _run_of(self, key: str) -> bool:
        """Whether a run of the step with run key `key` succeeded or is active."""
        runs = dg.RunsFilter(
            tags={RUN_KEY_TAG: key}, statuses=[*ACTIVE, dg.DagsterRunStatus.SUCCESS]
        )
        return bool(self.instance.get_runs(filters=runs, limit=1))

    def advance(self, ready: tuple[Step, ...]) -> None:
        """Start what may start of the ready steps, then wait for one run to end."""
        requests = {s: self.defs.request(self.name, s, self.tags) for s in ready}
        steps = {r.run_key: s for s, r in requests.items() if r is not None}
        active = self.instance.get_runs(
            filters=dg.RunsFilter(tags={EXPERIMENT_TAG: self.name}, statuses=ACTIVE)
        )
        wanted = not_active([r for r in requests.values() if r is not None], active)
        if self._in_this_process(wanted):
            self._in_process(steps[wanted[0].run_key])
            return
        for request in wanted:
            self.say(f"== {steps[request.run_key].describe()} (queued)")
            run_id = self.queued.submit(request)
            self.submitted[run_id] = steps[request.run_key]
            self.mine.add(run_id)
        self._adopt(active, steps)
        awaited = set(self.submitted) | {r.run_id for r in active}
        if not awaited:
            return
        run = self.watch.until_one_ends(awaited, self.mine, self._describe)
        if run.run_id in self.submitted:
            self._ended(run)

    def _adopt(self, active: list[dg.DagsterRun], steps: dict[str | None, Step]) -> None:
        """Another process's runs of ready steps are waited for as this driver's own (their
        end reported, a failure stopping it); queued ones need a dequeuer: this process,
        which becomes their launcher where a driver on another host submitted them."""
        for run in active:
            step = steps.get(run.tags.get(RUN_KEY_TAG))
            if step is not None and run.run_id not in self.submitted:
                self.submitted[run.run_id] = step
        if any(r.status == dg.DagsterRunStatus.QUEUED for r in active) and self.queued.available:
            self.queued.rehome(active)
            self.queued.serve()

    def _describe(self, run_id: str) -> str:
        step = self.submitted.get(run_id)
        if step is not None:
            return step.describe()
        run = self.instance.get_run_by_id(run_id)
        return f"{run.job_name} run of this experiment" if run else "a run"

    def _in_this_process(self, wanted: list[dg.RunRequest]) -> bool:
        """A step alone while no run is active on the instance (else it queues too, so the
        queue's limits count it before it starts); every step where there is no queue. Where
        the instance launches runs elsewhere (its `run_launcher` a `DockerRunLauncher`, say),
        every step goes through the queue to be launched there."""
        if not wanted:
            return False
        if not self.queued.available:
            return True
        if not isinstance(self.instance.run_launcher, dg.DefaultRunLauncher):
            return False
        busy = self.instance.get_runs(filters=dg.RunsFilter(statuses=ACTIVE), limit=1)
        return len(wanted) == 1 and not busy

    def _in_process(self, step: Step) -> None:
        raise_if_stopped()
        self.say(f"== {step.describe()}")
        try:
            if self.runs.execute(self.algorithm, self.name, step, self.tags):
                self._step_line(step)
                return
            why = self.runs.failure
        except Exception as exc:
            if (why := database_fault(exc)) is None:
                raise
            self._fail_left_run(step, why)
        if not self._again(step, why):
            raise RuntimeError(f"{step.describe()} failed: {why}")

    def _ended(self, run: dg.DagsterRun) -> None:
        step = self.submitted.pop(run.run_id)
        if run.status == dg.DagsterRunStatus.SUCCESS:
            self._step_line(step)
            return
        if run.run_id in self.watch.dead:  # its process died: the step is asked for again
            return
        failures = step_failures(self.instance, run.run_id)
        why = root_cause(failures) if failures else run_failure(self.instance, run.run_id)
        if self._again(step, why):
            return
        self.queued.cancel_queued(set(self.submitted))
        while self.submitted:  # the others finish what they started, and are recorded
            ended = self.watch.until_one_ends(set(self.submitted), self.mine, self._describe)
            self.submitted.pop(ended.run_id)
        raise_integrity_failure(failures)
        raise RuntimeError(f"{step.describe()} failed: {why or root_cause([])}")

    def _again(self, step: Step, why: str | None) -> bool:
        """Whether a step whose run failed is run again: when it lost its database connection
        where `reconnect.py` could not retry (a run worker starting while the database was
        away, one of Dagster's own transactions, a database away past the retries), up to
        `RERUNS` times; not for a database that does not exist or refuses the credentials.
        The step comes back ready, from its records, as after `flashrsi resume`."""
        lost = fault_line(why or "") is not None and may_reconnect(why or "")
        if not lost or self.reruns[step] == RERUNS:
            return False
        self.reruns[step] += 1
        self.say(f"   {step.describe()}: {why}; running it again ({self.reruns[step]}/{RERUNS})")
        return True

    def _fail_left_run(self, step: Step, why: str) -> None:
        """The step's run that this process left active when the error escaped it: failed,
        so that it holds nothing back."""
        request = self.defs.request(self.name, step, self.tags)
        key = {RUN_KEY_TAG: request.run_key or ""} if request is not None else {}
        mine = dg.RunsFilter(tags={**this_process(), **key}, statuses=ACTIVE)
        for run in self.instance.get_runs(filters=mine):
            self.instance.report_run_failed(run, why)

    def _step_line(self, step: Step) -> None:
        opened = self.experiments.algorithm(self.name)
        self.say(opened.step_line(opened.read_state(), step))

    def close(self, stopped: bool = False) -> None:
        self.queued.close(stopped=stopped)
        self.experiments.close()


def summary(experiment: Experiment, state) -> tuple[str, bool]:
    """The experiment in a few lines, as its algorithm puts it, and whether it was aborted."""
    lines = [f"experiment {experiment.config.experiment.name}"]
    note = experiment.meta.validity_note()
    if note:
        lines.append(f"  {note}")
    algorithm = open_algorithm(experiment, log=lambda _: None)
    lines += [f"  {line}" for line in algorithm.summary(state)]
    lines += [f"  {line}" for line in ledger_lines(Ledger.of(experiment))]
    lines += [f"  {line}" for line in control_lines(experiment)]
    return "\n".join(lines), algorithm.next_step(state).action == "aborted"
