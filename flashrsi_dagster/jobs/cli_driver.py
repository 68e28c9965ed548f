"""`flashrsi run` / `resume`: a whole experiment through Dagster, in-process, against the
persistent instance under the experiment home, so `flashrsi ui` shows it afterwards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.defs import defs_for
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.jobs.in_process import InProcessRuns
from flashrsi_dagster.jobs.instance import persistent_instance
from flashrsi_dagster.resources import ExperimentsResource

Say = Callable[[str], None]


def drive(experiment: Experiment, say: Say = print):
    """Run every remaining step of the experiment as Dagster runs on the persistent instance
    under its home; returns the final state."""
    instance = persistent_instance(Path(experiment.config.experiment.home))
    try:
        return drive_on(instance, experiment, say)
    finally:
        instance.dispose()


def drive_on(instance: dg.DagsterInstance, experiment: Experiment, say: Say = print):
    """Run every remaining step as Dagster runs on `instance`, one in-process run per step.
    A resumed experiment whose records fail the integrity check is refused before any step
    (`IntegrityError`, naming the files)."""
    experiment.records.verify()
    config = experiment.config
    home, name, algorithm = str(config.experiment.home), config.experiment.name, config.algorithm
    runs = InProcessRuns(instance, home)
    experiments = ExperimentsResource.at(home)
    try:
        defs_for(algorithm.name).register(instance, name, experiments.algorithm(name))
        while not (step := experiments.next_step(name)).finished:
            say(f"== {step.describe()}")
            if not runs.execute(algorithm.name, name, step):
                raise RuntimeError(f"{step.describe()} failed: {runs.failure}")
            say(_progress(experiments.algorithm(name).read_state(), step))
        return experiments.algorithm(name).read_state()
    finally:
        experiments.close()


def _progress(state, step: Step) -> str:
    if step.round is not None:
        r = state.round(step.round)
        score = "" if r.dev_score is None else f", dev score {r.dev_score:.3f}"
        return f"   round {r.round}: {r.status}{score}" + (f" — {r.reason}" if r.reason else "")
    if state.test is not None:
        return f"   sealed test of the promoted snapshot: {state.test.test_score:.3f}"
    return "   promoted" if state.promotion else "   done"


def summary(experiment: Experiment, state) -> str:
    lines = [f"experiment {experiment.config.experiment.name}"]
    note = experiment.meta.validity_note()
    if note:
        lines.append(f"  {note}")
    for r in state.rounds:
        score = "-" if r.dev_score is None else f"{r.dev_score:.3f}"
        detail = f" ({r.reason})" if r.reason else ""
        lines.append(f"  round {r.round}: {r.status:<13} dev {score}{detail}")
    if state.promotion:
        p = state.promotion
        lines.append(f"  promoted: round {p.round}, {p.snapshot_id[:12]}, dev {p.dev_score:.3f}")
    if state.test:
        lines.append(
            f"  sealed test: {state.test.test_score:.3f} over {state.test.test_tasks} tasks"
        )
    if any(r.status == "worker_failed" for r in state.rounds):
        lines.append("  aborted: the Worker failed (its trajectory is kept in the records)")
    return "\n".join(lines)
