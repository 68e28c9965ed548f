"""A ModularRSI batch on the Docker-environment task suite (`docker_tasks/`): the example's
five branches each run the batch's rollouts as Harbor trials in Harbor's docker environment
(`harbor_environment: docker-offline`), scored by the tasks' verifiers in their containers,
then the promotion and the sealed test, once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.benchmarks.harbor.suite import DOCKER_TASKS_DIR
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.records import Status
from flashrsi_dagster.rollouts.record import RolloutRecord

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Task.checksum will be deprecated:DeprecationWarning"),
]

EXAMPLE = Path(__file__).parents[3] / "examples" / "modular_rsi.yaml"


def test_a_batch_of_the_example_runs_in_docker_containers(tmp_path, harbor_docker):
    # On bare Ubuntu and Debian images, which lack libraries the staged interpreter needs
    # (`libsqlite3.so.0`, `libssl.so.3`): it comes with its own (`integrations.libraries`)
    tasks = tmp_path / "tasks"
    for name in ("release-manifest", "metrics-collector-service"):
        shutil.copytree(DOCKER_TASKS_DIR / name, tasks / name)
    config = load_config(
        EXAMPLE,
        [
            *("--experiment.home", str(tmp_path / "home")),
            *("--benchmark.name", "terminal_bench", "--benchmark.tasks_dir", str(tasks)),
            *("--benchmark.harbor_environment", "docker-offline", "--benchmark.concurrency", "2"),
            *("--benchmark.split_counts.train", "1", "--benchmark.split_counts.dev", "0"),
            *("--benchmark.split_counts.test", "1"),
            *("--algorithm.batch_size", "1", "--algorithm.num_rollouts", "1"),
            *("--algorithm.integration_rounds", "0"),
        ],
    )
    algo = ModularRSI(open_experiment(config), log=lambda _: None)

    state = algo.run()

    (batch,) = algo.schedule.batches
    for module in config.algorithm.modules:
        rollouts = RolloutRecord(algo.layout.rollouts(module, 0)).load()
        assert sorted(t.task_id for t in rollouts) == sorted(batch)
        for trajectory in rollouts:  # each scored by its verifier, in the task's container
            assert trajectory.metadata["trial"].startswith(f"{trajectory.task_id}__")
            assert trajectory.metadata["reward"] is not None
            assert trajectory.status not in (Status.INFRA_ERROR, Status.ERROR)
    assert state.promotion is not None and state.test is not None
    test = RolloutRecord(algo.layout.test_rollouts).load()
    assert len(test) == 1 and test[0].metadata["reward"] is not None
