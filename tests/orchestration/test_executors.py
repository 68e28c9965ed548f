"""The executor every algorithm job carries, chosen per run: in process by default, a
process per step (`multiprocess`), or Celery workers (tests/deployment/test_workers.py)."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pytest
from dagster._config import validate_config

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.in_process import InProcessRuns
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.executors import EXECUTORS, flashrsi_executor
from flashrsi_dagster.orchestration.resources import ExperimentsResource

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


def test_each_choice_takes_its_own_executors_config():
    schema = flashrsi_executor.config_schema.config_type

    assert set(EXECUTORS) == {"in_process", "multiprocess", "celery", "docker"}
    assert validate_config(schema, {"docker": {"image": "flashrsi:x", "network": "host"}}).success
    assert validate_config(schema, {"multiprocess": {"max_concurrent": 2}}).success
    assert validate_config(schema, {"celery": {"broker": {"env": "B"}, "include": []}}).success
    assert not validate_config(schema, {"celery": {"max_concurrent": 2}}).success
    assert not validate_config(schema, {"in_process": {}, "celery": {}}).success  # one choice


def _seed_round(home: Path, instance: dg.DagsterInstance):
    """Evaluate the seed (round 0) as the CLI driver does; its state and its run's events."""
    config = load_config(EXAMPLE, ["--experiment.home", str(home), "--benchmark.limit", "4"])
    experiment = open_experiment(config)
    name = config.experiment.name
    defs_for("meta_harness").register(instance, name, open_algorithm(experiment))
    experiments = ExperimentsResource.at(home)
    step = experiments.next_step(name)
    assert step.action == "evaluate_seed"
    assert InProcessRuns(instance, str(home)).execute("meta_harness", name, step)
    (run,) = instance.get_runs()
    successes = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS)
    algorithm = experiments.algorithm(name, log=lambda _: None)
    tree = lambda r: algorithm.experiment.snapshots.get(r.snapshot_id).tree  # noqa: E731
    outcome = [(r.round, r.status, r.dev_score, tree(r)) for r in algorithm.read_state().rounds]
    return outcome, successes


@pytest.mark.slow
def test_multiprocess_runs_a_round_a_process_per_step_as_in_process_does(tmp_path):
    (tmp_path / "mp").mkdir()
    (tmp_path / "mp" / "execution.yaml").write_text("multiprocess: {max_concurrent: 2}\n")
    with dg.instance_for_test() as instance:
        alone, _ = _seed_round(tmp_path / "one", instance)
    with dg.instance_for_test() as instance:
        state, successes = _seed_round(tmp_path / "mp", instance)

    pids = [e.dagster_event.pid for e in successes]
    assert len(pids) == 2 == len(set(pids)) and os.getpid() not in pids
    assert state == alone  # same scores, same snapshot tree
