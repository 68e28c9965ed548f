"""Meta-Harness through a real Dagster instance: definitions, the driver, sensor, schedule,
rematerialization and the `flashrsi run` / `resume` commands."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from flashrsi_dagster import scratch
from flashrsi_dagster.algorithms.meta_harness import Layout
from flashrsi_dagster.assets.meta_harness import DRIVER_TAG, ROUND_ASSETS
from flashrsi_dagster.assets.partitions import parse_round_key, partition, register, round_key
from flashrsi_dagster.config import load_config
from flashrsi_dagster.definitions import defs
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.jobs.driver import resources
from flashrsi_dagster.jobs.runner import drive_on
from flashrsi_dagster.resources import ExperimentsResource
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.sensors import NightlyConfig, meta_harness_driver, nightly_meta_harness

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")


def _experiment(home: Path, steps: int = 1):
    config = load_config(
        EXAMPLE,
        [
            "--experiment.home",
            str(home),
            "--benchmark.limit",
            "4",
            "--algorithm.max_steps",
            str(steps),
        ],
    )
    return open_experiment(config)


def test_definitions_load_and_validate():
    keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagster",
            "definitions",
            "validate",
            "-m",
            "flashrsi_dagster.definitions",
        ],
        capture_output=True,
        text=True,
    )

    assert keys == {
        "snapshot",
        "trajectories",
        "scores",
        "failure_map",
        "paired_stats",
        "promotion",
        "sealed_test_score",
    }
    assert {job.name for job in defs.resolve_all_job_defs()} >= {
        "meta_harness",
        "meta_harness_finalize",
    }
    assert result.returncode == 0, result.stderr


def test_round_keys_carry_the_experiment_and_are_validated():
    assert parse_round_key(round_key("exp-1.a", 12)) == ("exp-1.a", 12)
    for bad in ("exp|1.r001", "exp.r1", "exp"):
        try:
            parse_round_key(bad)
        except ValueError as exc:
            assert "not a Meta-Harness round key" in str(exc)
        else:
            raise AssertionError(bad)


def test_the_driver_runs_the_experiment_as_partitioned_runs(tmp_path):
    experiment = _experiment(tmp_path / "home")
    name = experiment.config.experiment.name
    with dg.instance_for_test() as instance:
        state = drive_on(instance, experiment, say=lambda _: None)

        assert [r.status for r in state.rounds] == ["evaluated", "evaluated"]
        assert state.test is not None
        event = instance.get_latest_materialization_event(dg.AssetKey("snapshot"))
        keys = instance.get_materialized_partitions(dg.AssetKey("trajectories"))
        assert {str(partition(name, 0)), str(partition(name, 1))} <= {str(k) for k in keys}
        assert event.asset_materialization.metadata["snapshot_id"].value == (
            state.rounds[1].snapshot_id
        )
        scores = instance.get_latest_materialization_event(dg.AssetKey("scores"))
        assert "score_by_round" in scores.asset_materialization.metadata
        promoted = instance.get_latest_materialization_event(dg.AssetKey("promotion"))
        chart = promoted.asset_materialization.metadata["score_by_round"].value
        table_rows = [line for line in chart.splitlines() if line.startswith("| ")][1:]
        assert "← promoted" in chart and len(table_rows) == len(state.rounds)
    assert (tmp_path / "home" / name / "dagster" / "trajectories" / "round-001-c0.parquet").exists()


def test_the_sensor_requests_the_next_step_with_an_idempotent_run_key(tmp_path):
    experiment = _experiment(tmp_path / "home")
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    with dg.instance_for_test() as instance:
        register(instance, name, 1)
        with dg.build_sensor_context(
            instance=instance, resources={"experiments_home": ExperimentsResource.at(home)}
        ) as context:
            first = meta_harness_driver(context)
            again = meta_harness_driver(context)

    (request,) = first.run_requests
    assert request.run_key == f"{name}:evaluate_seed:0"
    assert request.partition_key == str(partition(name, 0))
    assert request.tags[DRIVER_TAG] == "1"
    assert again.run_requests[0].run_key == request.run_key  # same state, same key


def test_the_nightly_schedule_starts_a_new_experiment(tmp_path):
    home = tmp_path / "home"
    with dg.instance_for_test() as instance:
        with dg.build_schedule_context(
            instance=instance,
            resources={
                "experiments_home": ExperimentsResource.at(home),
                "nightly": NightlyConfig(config_file=str(EXAMPLE)),
            },
            scheduled_execution_time=datetime(2026, 11, 30, 2, tzinfo=UTC),
        ) as context:
            request = nightly_meta_harness(context)

        name = request.tags["flashrsi/experiment"]
        assert name == "meta-harness-demo-nightly-20261130"
        assert request.run_key == f"{name}:evaluate_seed:0"
        assert (home / name / "run_meta.json").exists()
        assert round_key(name, 0) in instance.get_dynamic_partitions("meta_harness_round")


def test_rematerializing_a_round_reruns_that_snapshot_and_makes_no_new_one(tmp_path):
    experiment = _experiment(tmp_path / "home", steps=0 + 1)
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    with dg.instance_for_test() as instance:
        drive_on(instance, experiment, say=lambda _: None)
        experiments = ExperimentsResource.at(home)
        before = [s.id for s in experiment.snapshots.history()]
        layout = Layout.of(experiment.paths.records)
        test_before = layout.test.read_text()

        # As from the UI: no driver tag.
        result = dg.materialize(
            ROUND_ASSETS,
            partition_key=partition(name, 1),
            instance=instance,
            resources=resources(home),
        )

    assert result.success
    assert [s.id for s in experiment.snapshots.history()] == before
    archived = list(layout.folder.glob("round-001-dev.replaced-*.jsonl"))
    assert len(archived) == 1
    assert experiments.state(name).rounds[1].snapshot_id == before[1]
    assert layout.test.read_text() == test_before  # the sealed test is untouched


def test_flashrsi_run_then_resume(tmp_path):
    base = [
        "--config",
        str(EXAMPLE),
        "--experiment.home",
        str(tmp_path / "home"),
        "--benchmark.limit",
        "4",
        "--algorithm.max_steps",
        "1",
    ]

    run = subprocess.run([FLASHRSI, "run", *base], capture_output=True, text=True, timeout=600)
    resume = subprocess.run(
        [FLASHRSI, "resume", "--experiment", "meta-harness-demo", "--home", str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert run.returncode == 0, run.stderr
    assert "round 0: evaluated" in run.stdout and "round 1:" in run.stdout
    assert "promoted: round" in run.stdout and "sealed test:" in run.stdout
    assert resume.returncode == 0, resume.stderr
    assert "== " not in resume.stdout  # nothing left to run
    assert (tmp_path / "home" / ".dagster").is_dir()

    # The attack seen on main: a better dev score written into a round record (same size,
    # same mtime). Resume refuses the home in one message naming the record, exit 2.
    record = tmp_path / "home" / "meta-harness-demo" / "records" / "meta_harness" / "round-001.json"
    before, text = record.stat(), record.read_text()
    score = re.search(r'"dev_score": [0-9.]+', text).group()
    record.write_text(text.replace(score, '"dev_score": 1.0'.ljust(len(score))))
    os.utime(record, ns=(before.st_atime_ns, before.st_mtime_ns))
    refused = subprocess.run(
        [FLASHRSI, "resume", "--experiment", "meta-harness-demo", "--home", str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr == (
        "error: experiment 'meta-harness-demo' refused: the experiment's records fail their "
        "integrity check:\n  records/meta_harness/round-001.json: content changed since the "
        f"framework wrote it (chain entry {_written(record)})\n"
    )
    assert refused.stdout == ""


def _written(record: Path) -> int:
    """The chain entry that wrote `record`."""
    root = record.parents[2]
    lines = (root / "records" / "chain.jsonl").read_text().splitlines()
    rel = record.relative_to(root).as_posix()
    return max(e["seq"] for e in map(json.loads, lines) if e["path"] == rel)


def _final_state(home: Path):
    return ExperimentsResource.at(home).meta_harness("meta-harness-demo", log=lambda _: None)


def test_sigkill_during_round_2_then_resume_matches_an_uninterrupted_run(tmp_path):
    args = ["--config", str(EXAMPLE), "--benchmark.limit", "4", "--algorithm.max_steps", "2"]
    whole = subprocess.run(
        [FLASHRSI, "run", *args, "--experiment.home", str(tmp_path / "a")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert whole.returncode == 0, whole.stderr

    home, temp = tmp_path / "b", tmp_path / "tmp"  # a temp folder of their own, to look into
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    run = subprocess.Popen(
        [FLASHRSI, "run", *args, "--experiment.home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env=env,
    )
    records = home / "meta-harness-demo" / "records" / "meta_harness"
    deadline = time.monotonic() + 300
    while not (records / "round-002-edit.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    scratch_root = temp / f"flashrsi-{os.getuid()}"
    left = scratch_root / f"{run.pid}-{scratch.start_time(run.pid)}"
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    run.stdout.close()
    assert not (records / "round-002.json").exists()  # killed inside round 2
    assert left.is_dir()  # what the kill left: its temp folder
    assert (scratch_root / "history").is_dir()  # and the experiment's history view
    resumed = subprocess.run(
        [FLASHRSI, "resume", "--experiment", "meta-harness-demo", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert resumed.returncode == 0, resumed.stderr
    # The next start swept the dead process's temp data; its own went with its clean exit.
    assert sorted(p.name for p in temp.glob("flashrsi*")) == [scratch_root.name]
    assert list(scratch_root.iterdir()) == []

    a, b = _final_state(tmp_path / "a"), _final_state(home)
    sa, sb = a.state(), b.state()
    assert [(r.round, r.status, r.dev_score) for r in sa.rounds] == [
        (r.round, r.status, r.dev_score) for r in sb.rounds
    ]
    tree = lambda h, s: h.experiment.snapshots.get(s).tree  # noqa: E731
    assert tree(a, sa.promotion.snapshot_id) == tree(b, sb.promotion.snapshot_id)
    assert sa.test.test_score == sb.test.test_score
    for k in range(3):  # every dev rollout exactly once
        ids = [t.task_id for t in RolloutRecord(b.layout.rollouts(k), None).load()]
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 4


def test_the_launchpad_starts_a_new_experiment_from_a_typed_config_with_demo_defaults(tmp_path):
    job = defs.resolve_job_def("meta_harness")
    defaults = job.run_config_schema.config_type.fields["ops"].config_type.fields["snapshot"]
    fields = defaults.config_type.fields["config"].config_type.fields
    assert fields["config_file"].default_value == "examples/meta_harness.yaml"
    assert (fields["max_steps"].default_value, fields["benchmark_limit"].default_value) == (2, 9)

    home = str(tmp_path / "home")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("meta_harness_round", ["from-ui.r000"])  # "Add partition"
        launch = {"config_file": str(EXAMPLE), "max_steps": 1, "benchmark_limit": 3}
        result = dg.materialize(
            ROUND_ASSETS,
            partition_key=partition("from-ui", 0),
            instance=instance,
            resources=resources(home),
            run_config={"ops": {"snapshot": {"config": launch}}},
        )
        assert result.success
        assert "from-ui.r001" in instance.get_dynamic_partitions("meta_harness_round")
        experiments = ExperimentsResource.at(home)
        assert experiments.config("from-ui").algorithm.max_steps == 1
        assert experiments.state("from-ui").rounds[0].dev_tasks == 3
        assert experiments.next_step("from-ui").action == "propose"

        instance.add_dynamic_partitions("meta_harness_round", ["nowhere.r002"])
        missing = dg.materialize(
            ROUND_ASSETS,
            partition_key=partition("nowhere", 2),
            instance=instance,
            resources=resources(home),
            raise_on_error=False,
        )
    assert not missing.success
    failure = next(e for e in missing.all_events if e.is_step_failure)
    assert "does not exist: launch its round 0 (nowhere.r000)" in str(failure.event_specific_data)
