"""The path from an asset body to the rollouts stays short: a reader follows a candidate's
evaluation from its asset down to `evaluate_snapshot` in a few calls, each doing something."""

from __future__ import annotations

import traceback
from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.meta_harness.defs.assets import PARTITIONS
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.context import DRIVER_TAG
from flashrsi_dagster.rollouts import engine

EXAMPLE = Path(__file__).parents[4] / "examples" / "meta_harness.yaml"
MOST_FRAMES = 6
"""The asset body, the step, what it does, the score, `evaluate_snapshot` (and one spare)."""


class _Stop(Exception):
    """Raised where the rollouts would start, carrying the stack that reached them."""

    def __init__(self, stack: traceback.StackSummary) -> None:
        super().__init__("stopped where the rollouts start")
        self.stack = stack


def _path_to_rollouts(stack: traceback.StackSummary) -> list[str]:
    """Every frame from the `evaluation` asset's body down to `evaluate_snapshot`."""
    names = [frame.name for frame in stack]
    start, end = names.index("evaluation"), names.index("evaluate_snapshot")
    return [f"{Path(f.filename).name}:{f.name}" for f in stack[start : end + 1]]


@pytest.mark.parametrize(("k", "what"), [(0, "the seed"), (1, "a Worker's candidate")])
def test_an_evaluation_asset_reaches_the_rollouts_in_a_few_frames(tmp_path, monkeypatch, k, what):
    overrides = ["--experiment.home", str(tmp_path), "--benchmark.limit", "2"]
    experiment = open_experiment(load_config(EXAMPLE, [*overrides, "--algorithm.max_steps", "1"]))
    name = experiment.config.experiment.name
    job = build_definitions(str(tmp_path)).resolve_job_def("meta_harness")
    stacks: list[traceback.StackSummary] = []

    def stop(*_args, **_kwargs):
        stacks.append(traceback.extract_stack())
        raise _Stop(stacks[-1])

    with dg.instance_for_test() as instance:
        defs_for("meta_harness").register(instance, name, open_algorithm(experiment))
        for r in range(k + 1):
            if r == k:
                monkeypatch.setattr(engine, "run_rollouts", stop)
            result = job.execute_in_process(
                instance=instance,
                partition_key=PARTITIONS.key(name, r, "c0"),
                tags={DRIVER_TAG: "1"},
                raise_on_error=False,
            )
    assert not result.success and len(stacks) == 1, f"{what}: the rollouts were not reached"

    path = _path_to_rollouts(stacks[0])
    assert len(path) <= MOST_FRAMES, f"{what}: {len(path)} frames: {' -> '.join(path)}"
