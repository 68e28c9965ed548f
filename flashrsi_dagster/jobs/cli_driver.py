"""`flashrsi run` / `resume`: a whole experiment through Dagster, in-process, against the
persistent instance under the experiment home, so `flashrsi ui` shows it afterwards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.base import StepOrderError
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import ledger_lines
from flashrsi_dagster.defs import defs_for
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.jobs.in_process import InProcessRuns
from flashrsi_dagster.jobs.instance import persistent_instance
from flashrsi_dagster.resources import ExperimentsResource

Say = Callable[[str], None]


def drive(experiment: Experiment, say: Say = print, only: tuple[str, ...] | None = None):
    """Run every remaining step of the experiment as Dagster runs on the persistent instance
    under its home (`only`: just the steps with these actions, refusing when another comes
    first); returns the final state."""
    instance = persistent_instance(Path(experiment.config.experiment.home))
    try:
        return drive_on(instance, experiment, say, only)
    finally:
        instance.dispose()


def drive_on(
    instance: dg.DagsterInstance,
    experiment: Experiment,
    say: Say = print,
    only: tuple[str, ...] | None = None,
):
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
            if only is not None and step.action not in only:
                raise StepOrderError(
                    f"{'/'.join(only)} refused: {step.describe()} comes first; "
                    f"`flashrsi resume --experiment {name}` runs every remaining step"
                )
            say(f"== {step.describe()}")
            if not runs.execute(algorithm.name, name, step):
                raise RuntimeError(f"{step.describe()} failed: {runs.failure}")
            opened = experiments.algorithm(name)
            say(opened.step_line(opened.read_state(), step))
        return experiments.algorithm(name).read_state()
    finally:
        experiments.close()


def summary(experiment: Experiment, state) -> tuple[str, bool]:
    """The experiment in a few lines, as its algorithm puts it, and whether it was aborted."""
    lines = [f"experiment {experiment.config.experiment.name}"]
    note = experiment.meta.validity_note()
    if note:
        lines.append(f"  {note}")
    algorithm = open_algorithm(experiment, log=lambda _: None)
    lines += [f"  {line}" for line in algorithm.summary(state)]
    lines += [f"  {line}" for line in ledger_lines(Ledger.of(experiment))]
    return "\n".join(lines), algorithm.next_step(state).action == "aborted"
