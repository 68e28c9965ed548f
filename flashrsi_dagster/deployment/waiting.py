"""Waiting for runs, never without a bound: what the driver waits for is said as it changes,
and a wait in which no awaited run shows a sign of life for `WAIT_LIMIT` seconds ends with
an error naming the runs. A sign of life: a new status, a new event in the run's log, a new
heartbeat (`owner.HEARTBEAT_TAG`), or its process alive on this host."""

from __future__ import annotations

import time
from collections.abc import Callable

import dagster as dg

from flashrsi_dagster import scratch
from flashrsi_dagster.orchestration.owner import LAUNCHER_TAG, PROCESS_TAG, fail_dead_runs, why_dead

WAIT_LIMIT = 900
"""Seconds without a sign of life from any awaited run before the driver gives up waiting
(a run worker starting on a loaded machine took minutes; a step's events come seconds apart,
its heartbeat every `owner.BEAT` seconds)."""
ENDED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


class Stalled(RuntimeError):
    """No awaited run showed a sign of life within the bound."""


class Watch:
    """Waits on one experiment's runs for the driver: fails the dead ones as it goes."""

    def __init__(
        self,
        instance: dg.DagsterInstance,
        name: str,
        say: Callable[[str], None],
        limit: float = WAIT_LIMIT,
    ) -> None:
        self.instance, self.name, self.say, self.limit = instance, name, say, limit
        self._signs: dict[str, tuple] = {}
        self._said: dict[str, str] = {}
        self.dead: set[str] = set()
        """The runs it marked failed because their process had ended."""

    def until_one_ends(
        self, run_ids: set[str], quiet: set[str], describe: Callable[[str], str], poll=0.5
    ) -> dg.DagsterRun:
        """The first of `run_ids` to end; says the status of each not in `quiet` as it
        changes; raises `Stalled` after `limit` seconds without a sign of life."""
        since, looked = time.monotonic(), 0.0
        while True:
            if time.monotonic() - looked > 5:  # a process that died while we wait
                for run_id in fail_dead_runs(self.instance, self.name):
                    self.dead.add(run_id)
                    self.say(f"   run {run_id} of a process that ended is marked failed")
                looked = time.monotonic()
            runs = self.instance.get_runs(filters=dg.RunsFilter(run_ids=list(run_ids)))
            ended = [r for r in runs if r.status in ENDED]
            if ended:
                return ended[0]
            self._tell([r for r in runs if r.run_id not in quiet], describe)
            if self._lively(runs):
                since = time.monotonic()
            elif time.monotonic() - since > self.limit:
                raise Stalled(self._stalled(runs, describe))
            time.sleep(poll)

    def _tell(self, runs: list[dg.DagsterRun], describe: Callable[[str], str]) -> None:
        for run in runs:
            if self._said.get(run.run_id) != run.status.value:
                self._said[run.run_id] = run.status.value
                what = describe(run.run_id)
                self.say(f"   waiting for run {run.run_id} ({run.status.value}): {what}")

    def _lively(self, runs: list[dg.DagsterRun]) -> bool:
        """Whether a run showed a sign of life since the last look."""
        lively = False
        for run in runs:
            records = self.instance.get_records_for_run(run.run_id, limit=1, ascending=False)
            last = records.records[0].storage_id if records.records else None
            signs = (run.status, last, run.tags.get("flashrsi/heartbeat"))
            lively |= self._signs.get(run.run_id) != signs or _alive_here(run)
            self._signs[run.run_id] = signs
        return lively

    def _stalled(self, runs: list[dg.DagsterRun], describe: Callable[[str], str]) -> str:
        listed = "; ".join(f"run {r.run_id} ({r.status.value}, {describe(r.run_id)})" for r in runs)
        return (
            f"gave up waiting after {self.limit:.0f} s without a sign of life from {listed}: "
            "their process cannot be seen from here (another host with no heartbeat, or a "
            "run no process dequeues). Terminate them in `flashrsi ui` (Runs, Terminate), "
            "then `flashrsi resume` runs their steps again"
        )


def _alive_here(run: dg.DagsterRun) -> bool:
    """Its process (or its launcher's) runs in this process space."""
    owner = run.tags.get(PROCESS_TAG) or run.tags.get(LAUNCHER_TAG) or ""
    return (
        run.status != dg.DagsterRunStatus.QUEUED
        and owner.startswith(f"{scratch.process_space()}:")
        and why_dead(run) is None
    )
