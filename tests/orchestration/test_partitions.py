"""An experiment registers only the partitions a step of it may run in: the UI's partition
grid has no dead slot that a "materialize missing" run would fail on."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.algorithm_defs import defs_for

EXAMPLES = Path(__file__).parents[2] / "examples"


def _registered(tmp_path: Path, example: str, *overrides: str) -> list[str]:
    config = load_config(EXAMPLES / example, ["--experiment.home", str(tmp_path), *overrides])
    experiment = open_experiment(config)
    defs = defs_for(config.algorithm.name)
    with dg.instance_for_test() as instance:
        defs.register(instance, config.experiment.name, open_algorithm(experiment))
        assert defs.partitions.is_registered(instance, config.experiment.name)
        return instance.get_dynamic_partitions(defs.partitions.candidates.name)


def test_meta_harness_registers_the_seed_alone_in_round_0(tmp_path):
    keys = _registered(
        tmp_path, "meta_harness.yaml", "--algorithm.max_steps", "2",
        "--algorithm.candidates_per_round", "2",
    )  # fmt: skip
    assert keys == ["r000.c0", "r001.c0", "r001.c1", "r002.c0", "r002.c1"]


def test_the_evolver_registers_each_rounds_steps_only(tmp_path):
    keys = _registered(
        tmp_path, "evolver.yaml", "--algorithm.max_rounds", "2",
        "--algorithm.max_why_per_round", "1", "--algorithm.candidates_per_why", "2",
    )  # fmt: skip
    each_round = ["diagnose", "w1c1", "w1c2", "x1", "decide"]  # x1: the recombination
    assert keys == ["r000.vanilla", *(f"r{k:03d}.{s}" for k in (1, 2) for s in each_round)]
