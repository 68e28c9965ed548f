"""One home holding five finished experiments made on the offline simulator, each cut down
like its algorithm's own tests: the three demos of `flashrsi ui` — Meta-Harness (two Worker
steps), ModularRSI (two epochs of its five branches on batches of three tasks, one rollout
each, and the integration), the Evolver (one WHY, two candidates, one round) — and Best-of-N
(three samples) and DGM (one generation of two candidates). Made once per run (about three
minutes on two loaded cores), read by every explorer test: under pytest-xdist the first worker
to need it makes it in the run's shared temporary folder, and the others read that one (with
`--dist loadfile` the explorer's files land on both workers; each made its own before)."""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment

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
        *("--algorithm.patience", "1"),
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
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent  # the parent: the run's, all workers'
    root = shared / "explorer-demos"
    root.mkdir(exist_ok=True)
    home, made = root / "home", root / "made"
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker making it: wait, then read its home
        if not made.exists():
            shutil.rmtree(home, ignore_errors=True)  # a half-made one (its maker failed)
            for example, *overrides in DEMOS.values():
                make_experiment(home, example, *overrides)
            made.touch()
    return home
