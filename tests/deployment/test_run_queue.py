"""A home's run queue: Dagster's QueuedRunCoordinator with limits in total, per experiment and
per endpoint, written once into its dagster.yaml and kept as the user edits it."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest
from pydantic import ValidationError

from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.instance import (
    GENERATED_BEFORE,
    MOVED,
    QUEUE_BEFORE_TAGGING,
    QUEUE_NOW,
    SETTINGS,
    instance_dir,
)
from flashrsi_dagster.deployment.run_queue import RunLimits, RunQueue
from flashrsi_dagster.orchestration.dagster_internals import SubmitRunContext
from flashrsi_dagster.orchestration.tags import ENDPOINT_KEYS

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"


def _queue(folder, monkeypatch) -> dict:
    monkeypatch.setenv("DAGSTER_HOME", str(folder))  # the storage's folder refers to it
    instance = dg.DagsterInstance.from_config(str(folder))  # as Dagster reads the file
    try:
        config = instance.get_concurrency_config().run_queue_config
        limits = {(t["key"], t["limit"]) for t in config.tag_concurrency_limits}
        return {"max": config.max_concurrent_runs, "limits": limits}
    finally:
        instance.dispose()


def test_a_new_home_limits_runs_in_total_per_experiment_and_per_endpoint(tmp_path, monkeypatch):
    queue = _queue(
        instance_dir(tmp_path, RunLimits(max_concurrent_runs=3, per_experiment=2)), monkeypatch
    )

    assert queue["max"] == 3
    assert ("flashrsi/experiment", 2) in queue["limits"]
    endpoints = {(f"flashrsi/endpoint.{n}", 8) for n in range(1, ENDPOINT_KEYS + 1)}
    assert endpoints <= queue["limits"]


def test_a_file_an_earlier_version_wrote_gets_the_limits_and_a_users_is_kept(tmp_path, monkeypatch):
    for earlier in GENERATED_BEFORE:
        folder = tmp_path / "old" / ".dagster"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "dagster.yaml").write_text(earlier)
        assert (instance_dir(folder.parent) / "dagster.yaml").read_text() == SETTINGS
    edited = SETTINGS.replace("max_concurrent_runs: 8", "max_concurrent_runs: 2")
    (folder / "dagster.yaml").write_text(edited)
    assert _queue(instance_dir(folder.parent), monkeypatch)["max"] == 2


def test_limits_below_one_are_refused():
    with pytest.raises(ValidationError, match="per_endpoint"):
        RunLimits(per_endpoint=0)


def test_a_limited_queue_an_earlier_version_wrote_gets_the_tagging_class_its_limits_kept(
    tmp_path, monkeypatch
):
    folder = tmp_path / ".dagster"
    folder.mkdir()
    earlier = SETTINGS.replace(QUEUE_NOW, QUEUE_BEFORE_TAGGING)
    (folder / "dagster.yaml").write_text(earlier.replace("limit: 4", "limit: 3"))

    settings = (instance_dir(tmp_path) / "dagster.yaml").read_text()

    assert settings == SETTINGS.replace("limit: 4", "limit: 3")
    monkeypatch.setenv("DAGSTER_HOME", str(folder))
    instance = dg.DagsterInstance.from_config(str(folder))
    try:
        assert isinstance(instance.run_coordinator, RunQueue)
    finally:
        instance.dispose()


def test_a_file_naming_the_modules_before_they_moved_is_pointed_at_the_new_ones(
    tmp_path, monkeypatch
):
    """Homes made before `jobs/` became `deployment/` name `flashrsi_dagster.jobs.storage`
    and `flashrsi_dagster.jobs.run_queue`: they open, with their edits kept."""
    folder = tmp_path / ".dagster"
    folder.mkdir()
    edited = SETTINGS.replace("max_concurrent_runs: 8", "max_concurrent_runs: 2")
    (folder / "dagster.yaml").write_text(edited.replace(*reversed(MOVED)))
    assert "flashrsi_dagster.jobs.run_queue" in (folder / "dagster.yaml").read_text()

    assert (instance_dir(tmp_path) / "dagster.yaml").read_text() == edited
    assert _queue(folder, monkeypatch)["max"] == 2


def test_a_start_run_with_a_bad_config_fails_as_it_is_submitted_with_one_line(
    tmp_path, monkeypatch
):
    """The Launchpad checks types only (`overrides` is a list of strings): the queue checks
    the rest with the project's own loading before a run worker starts, and fails the run
    with the loader's one line; nothing is created."""
    folder = instance_dir(tmp_path / ".flashrsi")
    monkeypatch.setenv("DAGSTER_HOME", str(folder))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    shutil.copyfile(EXAMPLE, tmp_path / "examples" / EXAMPLE.name)  # the default's place
    bad = {"overrides": ["--algorithm.max_steps", "lots"]}
    job = build_definitions(".flashrsi").resolve_job_def("start_experiment")
    instance = dg.DagsterInstance.from_config(str(folder))
    try:
        run = instance.create_run_for_job(
            job, run_config={"ops": {"create_experiment": {"config": bad}}}
        )
        submitted = instance.run_coordinator.submit_run(SubmitRunContext(run, workspace=None))
        failure = instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE
        ).records
    finally:
        instance.dispose()

    assert submitted.status == dg.DagsterRunStatus.FAILURE
    (event,) = failure
    assert event.event_log_entry.dagster_event.message == (
        "examples/meta_harness.yaml: invalid config: algorithm.max_steps (set by "
        "--algorithm.max_steps): input should be a valid integer, unable to parse string as "
        "an integer (got lots)"
    )
    assert sorted(p.name for p in (tmp_path / ".flashrsi").iterdir()) == [".dagster"]
