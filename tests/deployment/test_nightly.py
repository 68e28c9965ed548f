"""Nightly evolution continues: the schedule, evaluated on a real Dagster instance, forks each
night from the last night's adopted snapshot onto the next evaluation-set version, and its
start run (the real `start_experiment` job) pins that commit; the nights form one lineage."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.sensors import NightlyConfig, nightly_evolution
from flashrsi_dagster.experiment.fork import FORKED_FROM
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from tests.dagster_instances import instance_on, sqlite_only
from tests.experiment.origins import EXAMPLE, origin

BASE = "meta-harness-demo"


def _night(instance, home: Path, day: int) -> dg.RunRequest:
    """The schedule's request for the night of 2026-12-`day`, as a tick (or preview) makes it."""
    with dg.build_schedule_context(
        instance=instance,
        resources={
            "experiments_home": ExperimentsResource.at(home),
            "nightly": NightlyConfig(config_file=str(EXAMPLE)),
        },
        scheduled_execution_time=datetime(2026, 12, day, 2, tzinfo=UTC),
    ) as context:
        return nightly_evolution(context)


def _start(instance, home: Path, request: dg.RunRequest) -> None:
    job = build_definitions(str(home)).resolve_job_def("start_experiment")
    result = job.execute_in_process(instance=instance, run_config=request.run_config)
    assert result.success


def _seed(home: Path, name: str):
    algorithm = open_algorithm(ExperimentsResource.at(home).open(name), log=lambda _: None)
    try:
        return algorithm.seed()
    finally:
        algorithm.close()


@sqlite_only
def test_each_night_forks_the_last_nights_adopted_snapshot_onto_the_next_version(tmp_path, storage):
    home = tmp_path / "home"
    first = f"{BASE}-nightly-20261201"
    _, _, adopted = origin(home, first)  # night 1 ran, and adopted its round 1
    with instance_on(storage) as instance:
        request = _night(instance, home, 2)
        start = request.run_config["ops"]["create_experiment"]["config"]
        assert start["fork_from"] == first
        assert (start["candidate"], start["eval_sets"]) == ("baseline", "next")
        second = request.tags[EXPERIMENT_TAG]
        assert not (home / second).exists()  # evaluating the schedule writes nothing

        _start(instance, home, request)
        fork = ExperimentsResource.at(home).config(second).experiment.fork
        assert (fork.experiment, fork.snapshot, fork.eval_sets) == (first, adopted.id, "next")
        seed = _seed(home, second)
        assert seed.tree == adopted.tree and seed.metadata[FORKED_FROM]["experiment"] == first

        third = _night(instance, home, 3)  # night 2 adopted nothing yet: its seed carries on
        assert third.run_config["ops"]["create_experiment"]["config"]["fork_from"] == second
        _start(instance, home, third)
        chained = ExperimentsResource.at(home).config(third.tags[EXPERIMENT_TAG]).experiment.fork
        assert chained.experiment == second and chained.snapshot == seed.id


@sqlite_only
def test_the_first_night_starts_from_the_configs_seed(tmp_path, storage):
    home = tmp_path / "home"
    with instance_on(storage) as instance:
        request = _night(instance, home, 1)

    start = request.run_config["ops"]["create_experiment"]["config"]
    name = f"{BASE}-nightly-20261201"
    assert start == {"config_file": str(EXAMPLE), "name": name, "overrides": []}


@pytest.mark.slow
@sqlite_only
def test_two_nights_run_as_one_lineage_and_are_never_compared_across_versions(tmp_path, storage):
    home = tmp_path / "home"
    overrides = ["--benchmark.limit", "4", "--algorithm.max_steps", "1"]
    first = f"{BASE}-nightly-20261201"
    with instance_on(storage) as instance:
        experiments = ExperimentsResource.at(home)
        night1 = experiments.create(EXAMPLE, name=first, overrides=overrides)
        drive_on(instance, night1, say=lambda _: None)
        request = _night(instance, home, 2)
        request.run_config["ops"]["create_experiment"]["config"]["overrides"] = overrides
        _start(instance, home, request)
        second = request.tags[EXPERIMENT_TAG]
        drive_on(instance, ExperimentsResource.at(home).open(second), say=lambda _: None)
        summary = instance.get_latest_materialization_event(
            dg.AssetKey(["meta_harness", "summary"])
        ).asset_materialization.metadata

    adopted = Ledger(home / first).baseline().candidate.snapshot_id
    assert f"snapshot `{adopted[:12]}`" in summary["forked_from"].value
    assert f"[{first}](" in summary["forked_from"].value
    assert summary["previous_night"].value == first
    assert summary["eval_set"].value == "dev/e2"
    assert "dev/e2 vs dev/e1" in summary["dev_vs_previous_night"].value
    assert "test/e2 vs test/e1" in summary["test_vs_previous_night"].value
    assert summary["best_dev_change_vs_previous_night"].value == "-"  # refused, not a lift
    assert summary["test_change_vs_previous_night"].value == "-"
