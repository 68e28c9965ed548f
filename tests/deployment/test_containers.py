"""Rounds in containers of the code location's image, on a real Docker engine: rounds run by
the instance's `DockerRunLauncher` (each run in a container of its own) and rounds whose steps
the `docker` executor runs (a container per step). Both on PostgreSQL instance storage, reached
over the host's network like the offline model; both leave the same records as rounds run in
this process: the seed's round and a Worker's round past it, whose edit (unconfined in a
container, its history a copy) must be the one made here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._config import process_config
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.storage.tags import DOCKER_IMAGE_TAG
from dagster_docker import DockerRunLauncher
from dagster_docker.docker_run_launcher import DOCKER_CONTAINER_ID_TAG

from flashrsi_dagster.algorithms.meta_harness.defs.assets import PARTITIONS
from flashrsi_dagster.algorithms.meta_harness.records import Layout, RoundRecord
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.containers import ContainerConfig
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.context import DRIVER_TAG, EXPERIMENT_TAG
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.postgres import fresh_database, needs_postgres

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
DAGSTER = str(Path(sys.executable).parent / "dagster")
URL_VAR = "FLASHRSI_TEST_PG_URL"
"""The instance's database URL, by name: dagster.yaml and the containers get the name only."""
MH = defs_for("meta_harness")


def _experiment(home: Path):
    # unconfined: bubblewrap inside a container needs a privileged one, which this machine's
    # engine (itself short of a capability) cannot start; see deployment/containers.py
    overrides = ["--experiment.home", str(home), "--benchmark.limit", "4"]
    overrides += ["--experiment.confinement", "none"]
    return open_experiment(load_config(EXAMPLE, [*overrides, "--algorithm.max_steps", "1"]))


def _instance(home: Path, settings: dict) -> dg.DagsterInstance:
    folder = home / ".dagster"  # inside the home: every container sees it at the same path
    folder.mkdir(parents=True, exist_ok=True)
    storage = {"storage": {"postgres": {"postgres_url": {"env": URL_VAR}}}}
    text = yaml.safe_dump({"telemetry": {"enabled": False}, **storage, **settings})
    (folder / "dagster.yaml").write_text(text)
    return dg.DagsterInstance.from_config(str(folder))


ROUNDS = (0, 1)
"""The seed's round and the Worker's round after it (`max_steps: 1`)."""


def _registered(instance: dg.DagsterInstance, home: Path) -> tuple[str, list]:
    """The experiment, registered with `instance`, and its rounds' partitions in order."""
    experiment = _experiment(home)
    name = experiment.config.experiment.name
    MH.register(instance, name, open_algorithm(experiment))
    return name, [PARTITIONS.key(name, k, "c0") for k in ROUNDS]


def _tags(name: str, partition: dg.MultiPartitionKey) -> dict[str, str]:
    grid = PARTITIONS.grid.get_tags_for_partition_key(str(partition))
    return {**grid, DRIVER_TAG: "1", EXPERIMENT_TAG: name}


def _results(home: Path, name: str) -> dict[int, tuple]:
    """Each round's outcome (its status, dev score and the edit's changed files) and its
    rollouts: the figures a round leaves, wherever it ran."""
    layout = Layout.of(home / name / "records")
    results = {}
    for k in ROUNDS:
        record = RoundRecord.model_validate_json(layout.round(k).read_text())
        edit = json.loads(layout.edit(k).read_text()) if k else {}
        rollouts = RolloutRecord(layout.rollouts(k)).load()
        outcome = (record.status, record.dev_score, edit.get("status"), edit.get("changed"))
        results[k] = (outcome, sorted((t.task_id, t.status, t.score, t.answer) for t in rollouts))
    return results


@pytest.fixture(scope="module")
def in_process(tmp_path_factory) -> dict[int, tuple]:
    """Rounds 0 and 1 of the same experiment, run here: what the containers must leave too."""
    home = tmp_path_factory.mktemp("here") / ".flashrsi"
    with dg.instance_for_test() as instance:
        name, partitions = _registered(instance, home)
        job = build_definitions(str(home)).resolve_job_def("meta_harness")
        for partition in partitions:
            assert job.execute_in_process(instance=instance, partition_key=partition).success
    results = _results(home, name)
    assert results[1][0][2] == "committed", results[1][0]  # the Worker edited something
    return results


def _finished(instance: dg.DagsterInstance, runs: int, timeout: float = 300) -> dg.DagsterRun:
    """The newest run, once the instance has `runs` runs and that one has finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        newest = instance.get_runs()
        if len(newest) == runs and newest[0].is_finished:
            return newest[0]
        time.sleep(1)
    raise AssertionError(f"run {runs} not finished after {timeout} s: {newest[:1]}")


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


def test_the_container_config_is_dagster_dockers_own_for_launcher_and_executor(tmp_path):
    config = ContainerConfig(home=tmp_path / ".flashrsi", env_vars=[URL_VAR])
    launcher = config.run_launcher()
    assert (launcher["module"], launcher["class"]) == ("dagster_docker", "DockerRunLauncher")
    checked = process_config(DockerRunLauncher.config_type(), launcher["config"])
    assert checked.success, checked.errors
    job = build_definitions(str(config.home)).resolve_job_def("meta_harness")
    assert dg.validate_run_config(job, config.executor())
    home = str(config.home.resolve())
    assert config.container()["container_kwargs"] == {
        "volumes": [f"{home}:{home}"],
        "working_dir": str(tmp_path.resolve()),
    }
    assert ContainerConfig(home=home, jails=True).container()["container_kwargs"]["privileged"]
    assert yaml.safe_load(config.run_launcher_yaml()) == {"run_launcher": launcher}
    with pytest.raises(ValueError, match="extra"):
        ContainerConfig(home=tmp_path, imag="typo")


@needs_postgres
@pytest.mark.slow
def test_docker_run_launcher_runs_each_round_in_a_container_of_its_own(
    tmp_path, code_image, in_process, monkeypatch
):
    home = tmp_path / "shared" / ".flashrsi"
    config = ContainerConfig(home=home, image=code_image, env_vars=[URL_VAR])
    with fresh_database() as url:
        monkeypatch.setenv(URL_VAR, url)
        direct = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
        settings = {"run_coordinator": direct, "run_launcher": config.run_launcher()}
        instance = _instance(home, settings)  # launched at once: no daemon to dequeue it
        name, partitions = _registered(instance, home)
        env = {**os.environ, "DAGSTER_HOME": str(home / ".dagster")}
        runs = []
        for count, partition in enumerate(partitions, 1):  # a round at a time, in order
            launch = [DAGSTER, "job", "launch", "-m", "flashrsi_dagster.definitions"]
            launch += ["-j", "meta_harness", "--tags", json.dumps(_tags(name, partition))]
            done = subprocess.run(launch, cwd=home.parent, env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr[-3000:]
            run = _finished(instance, count)
            container = run.tags[DOCKER_CONTAINER_ID_TAG]
            exit_code = _docker("wait", container).strip()  # the run ended; its worker exits
            logs = [e.message for e in instance.all_logs(run.run_id)]
            runs.append((run, container, exit_code, logs))
        instance.dispose()
    for run, container, exit_code, logs in runs:
        assert run.status == dg.DagsterRunStatus.SUCCESS, "\n".join(logs)
        assert run.tags[DOCKER_IMAGE_TAG] == code_image
        assert exit_code == "0"  # the run's worker was this container
        _docker("rm", container)
        assert any(f"in a new container {container}" in m for m in logs)
    assert _results(home, name) == in_process


@needs_postgres
@pytest.mark.slow
def test_the_docker_executor_runs_each_step_of_the_rounds_in_a_container(
    tmp_path, code_image, in_process, monkeypatch
):
    home = tmp_path / "shared" / ".flashrsi"
    config = ContainerConfig(home=home, image=code_image, env_vars=[URL_VAR])
    home.mkdir(parents=True)
    monkeypatch.chdir(home.parent)  # the definitions' home is `.flashrsi` here, as inside
    with fresh_database() as url:
        monkeypatch.setenv(URL_VAR, url)
        instance = _instance(home, {})
        name, partitions = _registered(instance, home)
        repository = ReconstructableRepository.for_module(
            "flashrsi_dagster.definitions", "defs", working_directory=str(home.parent)
        )
        job = repository.get_reconstructable_job("meta_harness")
        started, steps = [], set()
        for partition in partitions:
            with dg.execute_job(
                job, instance, run_config=config.executor(), tags=_tags(name, partition)
            ) as result:
                events = result.all_events
                failures = [e.message for e in events if e.is_failure or e.is_run_failure]
                assert result.success, failures
                started += [e for e in events if e.event_type_value == "STEP_WORKER_STARTING"]
                steps |= {(partition, e.step_key) for e in events if e.is_step_success}
        instance.dispose()
    containers = {e.event_specific_data.metadata["Docker container id"].value for e in started}
    assert steps and len(containers) == len(steps)  # each step in a container of its own
    for container in containers:
        assert _docker("wait", container).strip() == "0"
        _docker("rm", container)
    assert _results(home, name) == in_process
