"""Steps on Celery workers: `flashrsi worker` processes (two, started here) take a home's
steps from the real broker, on a PostgreSQL instance; the experiment comes out as it does in
process, and a worker killed mid-step leaves nothing half-recorded."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.deployment.celery_workers import (
    BROKER,
    FLASHRSI,
    Worker,
    celery_home,
    environment,
    needs_broker,
    workers,
)
from tests.postgres import fresh_database, needs_postgres

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
ARGS = ["--benchmark.limit", "2", "--algorithm.max_steps", "1"]  # round 1 still promotes
NAME = "meta-harness-demo"
STEP_SUCCESS = dg.DagsterEventType.STEP_SUCCESS


def _experiment(home: Path):
    return open_experiment(load_config(EXAMPLE, [*ARGS, "--experiment.home", str(home)]))


@pytest.fixture(scope="module")
def in_process(tmp_path_factory) -> Path:
    """The same experiment driven in process on a SQLite instance: what Celery must match."""
    home = tmp_path_factory.mktemp("in-process") / "home"
    with dg.instance_for_test() as instance:
        drive_on(instance, _experiment(home), say=lambda _: None)
    return home


def _outcome(home: Path):
    algorithm = ExperimentsResource.at(home).algorithm(NAME, log=lambda _: None)
    state = algorithm.read_state()
    tree = algorithm.experiment.snapshots.get(state.promotion.snapshot_id).tree
    rounds = [(r.round, r.status, r.dev_score) for r in state.rounds]
    return rounds, tree, state.test.test_score


def _assert_same_experiment(home: Path, reference: Path) -> None:
    assert _outcome(home) == _outcome(reference)
    algorithm = ExperimentsResource.at(home).algorithm(NAME, log=lambda _: None)
    algorithm.experiment.records.verify()
    for k in range(2):  # every dev rollout exactly once
        ids = [t.task_id for t in RolloutRecord(algorithm.layout.rollouts(k), None).load()]
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 2


def _instance(home: Path) -> dg.DagsterInstance:
    return dg.DagsterInstance.from_config(str(home / ".dagster"))


def _takers(instance: dg.DagsterInstance, run_id: str, step: str) -> list[str]:
    """The Celery workers that took `step` of the run, in order (by name, without host)."""
    names = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        data = entry.dagster_event.engine_event_data
        if entry.step_key == step and "Celery worker" in data.metadata:
            names.append(str(data.metadata["Celery worker"].value).split("@")[0])
    return names


def _no_secret_written(home: Path) -> None:
    password = BROKER.split("//")[1].split("@")[0].split(":")[1]
    for path in home.rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path


@needs_postgres
@needs_broker
def test_a_round_runs_on_two_worker_processes_as_it_runs_in_process(
    tmp_path, monkeypatch, in_process
):
    home = tmp_path / "home"
    queue = celery_home(home)
    with fresh_database() as url:
        env = environment(url)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        with workers(home, queue, env) as started:
            instance = _instance(home)
            try:
                drive_on(instance, _experiment(home), say=lambda _: None)
                runs = instance.get_runs()
                steps = {
                    (run.run_id, e.step_key): e.dagster_event.pid
                    for run in runs
                    for e in instance.all_logs(run.run_id, of_type=STEP_SUCCESS)
                }
                takers = {(r, s): _takers(instance, r, s) for r, s in steps}
                celery = {w.celery_pid() for w in started}
            finally:
                instance.dispose()

    assert len(runs) == 3 and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    names = {w.name for w in started}
    assert len(steps) == 6  # snapshot + evaluation per round, promotion + sealed test
    # every step ran in a worker process, each taken once, none in this process
    assert set(steps.values()) <= celery
    assert all(len(t) == 1 and t[0] in names for t in takers.values())
    _assert_same_experiment(home, in_process)
    _no_secret_written(home)


def _wait_until_taken(home: Path, started: list[Worker], key: str, step: str) -> Worker:
    """The worker that took `step` of the run with run key `key`, once the step has made its
    first model call there (so it is mid-step)."""
    instance, deadline = _instance(home), time.monotonic() + 600
    try:
        while time.monotonic() < deadline:
            runs = instance.get_runs(dg.RunsFilter(tags={"dagster/run_key": key}))
            taker = runs and _takers(instance, runs[0].run_id, step)
            if taker:
                worker = next(w for w in started if w.name == taker[0])
                if "role=worker" in worker.log.read_text():
                    return worker
            time.sleep(0.1)
    finally:
        instance.dispose()
    raise AssertionError(f"{step} of {key} was not taken in time")


@pytest.mark.slow
@needs_postgres
@needs_broker
def test_a_worker_killed_mid_step_hands_the_step_to_another_and_nothing_is_half_recorded(
    tmp_path, monkeypatch, in_process
):
    home = tmp_path / "home"
    queue = celery_home(home)
    records = home / NAME / "records" / "meta_harness"
    with fresh_database() as url:
        env = environment(url)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        with workers(home, queue, env) as started:
            run = subprocess.Popen(
                [FLASHRSI, "run", "--config", str(EXAMPLE), *ARGS, "--experiment.home", str(home)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            key = f"{NAME}:propose:r001.c0"
            victim = _wait_until_taken(home, started, key, "meta_harness__snapshot")
            os.kill(victim.pid, signal.SIGKILL)  # mid-step: the Worker agent is at work there
            victim.process.wait()
            assert not (records / "round-001.json").exists()  # the round is not recorded
            ExperimentsResource.at(home).open(NAME).records.verify()  # what is there is whole
            out, err = run.communicate(timeout=900)
            resumed = subprocess.run(
                [FLASHRSI, "resume", "--experiment", NAME, "--home", str(home)],
                capture_output=True,
                text=True,
                timeout=600,
                env={**os.environ, **env},
            )
            instance = _instance(home)
            try:
                (propose,) = instance.get_runs(dg.RunsFilter(tags={"dagster/run_key": key}))
                takers = _takers(instance, propose.run_id, "meta_harness__snapshot")
            finally:
                instance.dispose()

    assert run.returncode == 0, err
    assert "promoted: round" in out
    # the broker handed the killed worker's step to the other one, which ran it from its start
    survivor = next(w for w in started if w is not victim)
    assert takers == [victim.name, survivor.name]
    assert propose.status == dg.DagsterRunStatus.SUCCESS
    assert resumed.returncode == 0, resumed.stderr
    assert "== " not in resumed.stdout  # nothing was left to do
    _assert_same_experiment(home, in_process)
