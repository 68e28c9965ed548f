"""One home holding five finished experiments made on the offline simulator, each cut down
like its algorithm's own tests: the three demos of `flashrsi ui` — Meta-Harness (two Worker
steps), ModularRSI (two epochs of its five branches on batches of three tasks, one rollout
each, and the integration), the Evolver (one WHY, two candidates, one round, each task run
twice) — and Best-of-N (three samples) and DGM (one generation of two candidates). Made once
per run (about three minutes on two loaded cores), read by every explorer test on whichever
xdist worker it runs (`tests/run_wide.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from tests.run_wide import made_once

EXAMPLES = Path(__file__).parents[2] / "examples"
DEMOS = {
    "meta-harness-demo": (
        *("meta_harness.yaml", "--algorithm.max_steps", "2", "--benchmark.limit", "6"),
    ),
    "modular-rsi-demo": (
        *("modular_rsi.yaml", "--algorithm.batch_size", "3", "--algorithm.num_rollouts", "1"),
        *("--benchmark.limit", "6"),
    ),
    "evolver-demo": (
        *("evolver.yaml", "--benchmark.split_counts.train", "12"),
        *("--benchmark.split_counts.test", "6", "--algorithm.max_why_per_round", "1"),
        *("--algorithm.candidates_per_why", "2", "--algorithm.max_rounds", "1"),
        *("--algorithm.patience", "1", "--algorithm.k", "2"),
    ),
    "best-of-n-demo": ("best_of_n.yaml", "--algorithm.samples", "3", "--benchmark.limit", "4"),
    "dgm-demo": (
        "dgm.yaml",
        *("--algorithm.generations", "1", "--algorithm.dev_candidates", "2"),
        *("--algorithm.staged.first_tasks", "2", "--benchmark.split_counts.train", "4"),
        *("--benchmark.split_counts.dev", "2", "--benchmark.split_counts.test", "2"),
    ),
}  # fmt: skip


def make_experiment(home: Path, example: str, *overrides: str, until: str | None = None):
    config = load_config(EXAMPLES / example, ["--experiment.home", str(home), *overrides])
    algorithm = open_algorithm(open_experiment(config), log=lambda _: None)
    algorithm.run(until=until)
    return algorithm


@pytest.fixture(scope="session")
def demo_home(tmp_path_factory, worker_id: str) -> Path:
    def make(home: Path) -> None:
        for example, *overrides in DEMOS.values():
            make_experiment(home, example, *overrides)

    return made_once(tmp_path_factory, worker_id, "explorer-home", make)
