"""Every algorithm's example reaches the same figures with `confinement: none` (the mode of a
container or a pod) as jailed: the same dev scores, edits, promotions and sealed test, rounds
past the seed's included. The offline model is deterministic, so any difference is one in what
the Worker or the target saw. (The same examples in containers: `tests/deployment/
test_algorithms_in_containers.py`.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import ledger_lines
from flashrsi_dagster.experiment import open_experiment
from tests.conftest import needs_jails
from tests.run_wide import made_once

EXAMPLES = Path(__file__).parents[2] / "examples"
SMALL = {  # each cut down to one round (batch, generation) past the seed's, a few candidates
    "meta_harness": ("--algorithm.max_steps", "1", "--benchmark.limit", "3"),
    "best_of_n": ("--benchmark.limit", "6", "--algorithm.samples", "2"),  # at 3: no edit
    "dgm": (
        *("--algorithm.generations", "1", "--algorithm.children_per_generation", "1"),
        *("--algorithm.dev_candidates", "2", "--algorithm.staged.first_tasks", "2"),
        *("--benchmark.split_counts.train", "4", "--benchmark.split_counts.dev", "2"),
        *("--benchmark.split_counts.test", "2"),
    ),
    "evolver": (
        *("--algorithm.max_rounds", "1", "--benchmark.limit", "6", "--algorithm.k", "1"),
        *("--algorithm.max_why_per_round", "1", "--algorithm.candidates_per_why", "2"),
        *("--algorithm.recombinations_per_round", "0"),
    ),
    "stop": (
        *("--algorithm.rounds", "1", "--algorithm.groups", "1", "--algorithm.group_size", "4"),
        *("--algorithm.budget", "2", "--algorithm.meta_budget", "1"),
        *("--benchmark.split_counts.train", "4", "--benchmark.split_counts.dev", "4"),
        *("--benchmark.split_counts.test", "4"),
    ),
    "modular_rsi": (  # the five modules the config requires: one batch, one edit each
        *("--algorithm.edit_budget", "1", "--algorithm.num_rollouts", "1"),
        *("--benchmark.split_counts.train", "3", "--benchmark.split_counts.test", "3"),
    ),
}
_VARYING = re.compile(r"\b[0-9a-f]{12,40}\b|@\d{4}-\d\d-\d\dT[0-9:.+]+|\b\d+ tokens\b")
"""What differs between any two runs: snapshot ids (a commit's time is in its id), ledger
times, and token counts (the records a Worker reads hold those ids and times)."""


def figures(name: str, home: Path, confinement: str) -> tuple[list[str], int]:
    """The example's summary and ledger lines (what varies masked) and how many snapshots
    it made, run here."""
    experiment = opened(name, home, confinement)
    algorithm = open_algorithm(experiment, log=lambda _: None)
    return figures_of(experiment, algorithm.run())


def unconfined_figures(
    name: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> tuple[list[str], int]:
    """`figures(name, ..., "none")`, made once per test run: the test here and the containers'
    test both compare with it (the offline model is deterministic, so one run stands for
    every run of it)."""

    def make(folder: Path) -> None:
        lines, snapshots = figures(name, folder / "home", "none")
        (folder / "figures.json").write_text(json.dumps([lines, snapshots]))

    folder = made_once(tmp_path_factory, worker_id, f"unconfined-{name}", make)
    lines, snapshots = json.loads((folder / "figures.json").read_text())
    return lines, snapshots


def opened(name: str, home: Path, confinement: str):
    overrides = ["--experiment.home", str(home), "--experiment.confinement", confinement]
    return open_experiment(load_config(EXAMPLES / f"{name}.yaml", [*overrides, *SMALL[name]]))


def figures_of(experiment, state) -> tuple[list[str], int]:
    algorithm = open_algorithm(experiment, log=lambda _: None)
    lines = [*algorithm.summary(state), *ledger_lines(Ledger.of(experiment))]
    return [_VARYING.sub("<varies>", line) for line in lines], len(experiment.snapshots.history())


@needs_jails
@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_an_example_reaches_the_same_figures_unconfined_as_jailed(
    name: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str
):
    unconfined = unconfined_figures(name, tmp_path_factory, worker_id)
    jailed = figures(name, tmp_path / "bwrap", "bwrap")

    assert unconfined == jailed
    assert unconfined[1] > 1, "no snapshot past the seed: nothing was edited"
