"""`flashrsi run` / `resume` / `ui`: a whole experiment through Dagster, in-process, against
the persistent instance under the experiment home, so `flashrsi ui` shows it afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.meta_harness import State, Step
from flashrsi_dagster.assets.partitions import register
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.jobs.driver import execute
from flashrsi_dagster.resources import ExperimentsResource

Say = Callable[[str], None]


def instance_dir(home: Path) -> Path:
    """The Dagster instance of a home folder (`DAGSTER_HOME`), created on first use with
    telemetry off: nothing leaves the machine."""
    folder = Path(home) / ".dagster"
    settings = folder / "dagster.yaml"
    if not settings.exists():
        folder.mkdir(parents=True, exist_ok=True)
        settings.write_text("telemetry:\n  enabled: false\n")
    return folder


def persistent_instance(home: Path) -> dg.DagsterInstance:
    folder = instance_dir(home)
    os.environ["DAGSTER_HOME"] = str(folder)  # the CLI's own process: the instance lives here
    return dg.DagsterInstance.get()


def drive(experiment: Experiment, say: Say = print) -> State:
    """Run every remaining step of the experiment as Dagster runs on the persistent instance
    under its home; returns the final state."""
    instance = persistent_instance(Path(experiment.config.experiment.home))
    try:
        return drive_on(instance, experiment, say)
    finally:
        instance.dispose()


def drive_on(instance: dg.DagsterInstance, experiment: Experiment, say: Say = print) -> State:
    """Run every remaining step as Dagster runs on `instance`, one in-process run per step.
    A resumed experiment whose records fail the integrity check is refused before any step
    (`IntegrityError`, naming the files)."""
    experiment.records.verify()
    config = experiment.config
    home, name = str(config.experiment.home), config.experiment.name
    register(instance, name, config.algorithm.max_steps)
    experiments = ExperimentsResource.at(home)
    while (step := experiments.next_step(name)).action not in ("done", "aborted"):
        say(f"== {step.action}" + (f" (round {step.round})" if step.round is not None else ""))
        if not execute(instance, home, name, step):
            raise RuntimeError(f"the Dagster run for {step.action} failed; see `flashrsi ui`")
        say(_progress(experiments.state(name), step))
    return experiments.state(name)


def _progress(state: State, step: Step) -> str:
    if step.round is not None:
        r = next(r for r in state.rounds if r.round == step.round)
        score = "" if r.dev_score is None else f", dev score {r.dev_score:.3f}"
        return f"   round {r.round}: {r.status}{score}" + (f" — {r.reason}" if r.reason else "")
    if state.test is not None:
        return f"   sealed test of the promoted snapshot: {state.test.test_score:.3f}"
    return "   promoted" if state.promotion else "   done"


def summary(experiment: Experiment, state: State) -> str:
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


def ui(home: Path, port: int) -> int:
    """`dagster dev` on the experiments' instance, from the folder holding the home."""
    env = {**os.environ, "DAGSTER_HOME": str(instance_dir(home))}
    command = [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-m",
        "flashrsi_dagster.definitions",
        "-p",
        str(port),
    ]
    return subprocess.call(command, cwd=Path(home).resolve().parent, env=env)
