"""The round driver sensor on a round of several candidates: one tick requests each of them
as a run of its own; a candidate with an active run is not requested again, and nothing is
while a run of another step is active."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.lock import driving
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.resources import ExperimentsResource

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
MH = defs_for("meta_harness")


def _tick(instance: dg.DagsterInstance, home: Path) -> list[dg.RunRequest]:
    resources = {"experiments_home": ExperimentsResource.at(home)}
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        return list(round_driver(context).run_requests)


def _active(instance: dg.DagsterInstance, request: dg.RunRequest, **tags: str) -> None:
    """A started run of the request."""
    tags = {**request.tags, "dagster/partition": str(request.partition_key), **tags}
    run = dg.DagsterRun(job_name=request.job_name, status=dg.DagsterRunStatus.STARTED, tags=tags)
    instance.add_run(run)


def test_one_tick_requests_every_ready_candidate_each_once(tmp_path):
    overrides = ["--experiment.home", str(tmp_path), "--benchmark.limit", "2"]
    overrides += ["--algorithm.max_steps", "1", "--algorithm.candidates_per_round", "3"]
    experiment = open_experiment(load_config(EXAMPLE, overrides))
    algorithm = open_algorithm(experiment, log=lambda _: None)
    algorithm.do(algorithm.next_step(algorithm.read_state()))  # the seed
    algorithm.close()
    name = experiment.config.experiment.name
    with dg.instance_for_test() as instance:
        MH.register(instance, name, open_algorithm(experiment))
        first = _tick(instance, tmp_path)
        assert [r.run_key for r in first] == [f"{name}:propose:r001.c{i}" for i in range(3)]
        assert [r.tags["flashrsi/candidate"] for r in first] == ["c0", "c1", "c2"]
        assert all(r.tags["flashrsi/round"] == "1" for r in first)
        assert {r.tags["flashrsi/endpoint.1"] for r in first} == {"offline"}
        titles = [r.tags["flashrsi/about"] for r in first]  # the Runs list's readable name
        assert titles == [f"{name} r001.c{i} propose" for i in range(3)]

        _active(instance, first[0], **{"dagster/run_key": first[0].run_key})
        _active(instance, first[2])  # launched from the UI: no run key, the same partition
        assert [r.run_key for r in _tick(instance, tmp_path)] == [first[1].run_key]

        other = MH.request(name, Step("promote"))  # a step that is not ready, running
        assert other is not None and other.tags["flashrsi/about"] == f"{name} promote"
        _active(instance, other, **{"dagster/run_key": "another step"})
        assert _tick(instance, tmp_path) == []


def test_an_experiment_a_flashrsi_run_drives_is_left_alone_by_the_sensor(tmp_path):
    """One driver per experiment: the sensor requested each round-0 branch a second time
    beside `flashrsi run` (18 runs for 13 steps). While the driver lock is held, it asks
    nothing; once released, it takes over."""
    overrides = ["--experiment.home", str(tmp_path), "--benchmark.limit", "2"]
    experiment = open_experiment(load_config(EXAMPLE, overrides))
    name = experiment.config.experiment.name
    with dg.instance_for_test() as instance:
        MH.register(instance, name, open_algorithm(experiment))
        with driving(experiment.paths.root):
            assert _tick(instance, tmp_path) == []
        assert [r.run_key for r in _tick(instance, tmp_path)] == [f"{name}:evaluate_seed:r000.c0"]
