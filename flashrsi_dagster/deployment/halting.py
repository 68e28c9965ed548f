"""Stopping an experiment's runs in flight for a roll-back (`decisions.rollback.InFlight`), on
the home's Dagster instance.

Each active run of the experiment is asked to stop in the way that reaches it: a queued run is
cancelled before it starts; a launched one is terminated through its run launcher (the run
worker of a code server); failing that, a run executing in a live process of this host (an
in-process run of `flashrsi run`, a run worker the launcher cannot reach) gets that process's
stop signal, which ends it as any stop does (`lifecycle.py`). A run of another host is only
waited for. A run whose process has ended is then failed (`owner.fail_dead_runs`), as when an
experiment is driven again.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import dagster as dg

from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.owner import fail_dead_runs, running_here
from flashrsi_dagster.orchestration.ready import ACTIVE

WHY = "cancelled for a roll-back of the experiment's baseline"


class ExperimentRuns:
    """Experiment `name`'s runs on `instance`: stopped (`cancel`), watched (`active`)."""

    def __init__(self, instance: dg.DagsterInstance, name: str) -> None:
        self.instance, self.name = instance, name
        self._stopped: dict[str, str] = {}

    def cancel(self) -> list[str]:
        """Stop every active run not asked yet (one started since is asked now); a line per
        run asked, what was done."""
        for run in self._active():
            if run.run_id not in self._stopped:
                self._stopped[run.run_id] = self._stop(run)
        return [f"{run_id}: {done}" for run_id, done in self._stopped.items()]

    def active(self) -> list[str]:
        """The runs that may still write the experiment's records, once the runs whose
        process has ended are failed."""
        fail_dead_runs(self.instance, self.name)
        return [f"{run.run_id} ({run.status.value})" for run in self._active()]

    def _active(self) -> list[dg.DagsterRun]:
        tags = {EXPERIMENT_TAG: self.name}
        return list(self.instance.get_runs(filters=dg.RunsFilter(tags=tags, statuses=ACTIVE)))

    def _stop(self, run: dg.DagsterRun) -> str:
        if run.status == dg.DagsterRunStatus.QUEUED:
            self.instance.report_run_canceled(run, WHY)
            return "queued: cancelled before it started"
        with contextlib.suppress(Exception):  # no launcher can reach it: its process next
            if self.instance.run_launcher.terminate(run.run_id):
                return "terminated through its run launcher"
        pid = running_here(run)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(pid, signal.SIGTERM)
            return f"stop signal sent to its process (pid {pid})"
        return "its process is not on this host: waited for"


def experiment_runs(home: Path, name: str) -> ExperimentRuns | None:
    """The experiment's runs on the home's instance; None when the home has none (no run of
    it was ever made, so none is in flight)."""
    from flashrsi_dagster.deployment.instance import persistent_instance

    if not (Path(home) / ".dagster" / "dagster.yaml").is_file():
        return None
    return ExperimentRuns(persistent_instance(home), name)
