"""Meta-Harness through a real Dagster instance: definitions, the in-process driver, the
sensor, the schedule, the experiment starter, the search's order, rematerialization, and the
`flashrsi run` / `resume` commands."""

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
import pytest

from flashrsi_dagster import scratch
from flashrsi_dagster.algorithms import registry
from flashrsi_dagster.algorithms.meta_harness.defs.assets import PARTITIONS, key
from flashrsi_dagster.algorithms.meta_harness.records import Layout
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.definitions import defs as code_location
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.postgres import URL_ENV
from flashrsi_dagster.deployment.sensors import NightlyConfig, nightly_evolution, round_driver
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.keys import candidate_key, parse_candidate_key
from flashrsi_dagster.explorer.links import experiment_url
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.context import DRIVER_TAG, EXPERIMENT_TAG
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.dagster_instances import instance_on, sqlite_only
from tests.postgres import rows

defs = code_location()  # as Dagster loads it (`@dg.definitions`)

EXAMPLE = Path(__file__).parents[4] / "examples" / "meta_harness.yaml"
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
MH = defs_for("meta_harness")


def _experiment(home: Path, steps: int = 1, name: str | None = None):
    overrides = ["--experiment.home", str(home), "--benchmark.limit", "4"]
    overrides += ["--algorithm.max_steps", str(steps)]
    config = load_config(EXAMPLE, [*overrides, *(["--experiment.name", name] if name else [])])
    return open_experiment(config)


def _materialize(instance, home, job: str, partition, *, tags=None, selection=None):
    """A run of one of the definitions' jobs as the UI would launch it: no driver tag."""
    job_def = build_definitions(str(home)).resolve_job_def(job)
    return job_def.execute_in_process(
        instance=instance,
        partition_key=partition,
        tags=tags or {},
        asset_selection=selection,
        raise_on_error=False,
    )


def _failure(result) -> str:
    return "\n".join(str(e.event_specific_data) for e in result.all_events if e.is_step_failure)


def _latest(instance, name: str, partition=None):
    event = instance.get_latest_materialization_event(key(name))
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key(name), asset_partitions=[str(partition)])
        if partition is not None
        else key(name),
        limit=1,
    ).records
    return (records[0].asset_materialization if records else event.asset_materialization).metadata


def test_definitions_load_and_validate():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
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
        # the definitions alone: not an instance another test of this worker pointed to
        env={k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", URL_ENV)},
    )

    meta_harness = (
        "snapshot",
        "trajectories",
        "scores",
        "failure_map",
        "paired_stats",
        "promotion",
        "sealed_test_score",
        "summary",
    )
    modular_rsi = (
        "trajectories",
        "memory",
        "findings",
        "snapshot",
        "gates",
        "integration",
        "final_check",
        "promotion",
        "sealed_test_score",
        "summary",
    )
    evolver = (
        "failure_map",
        "plan",
        "snapshot",
        "screen",
        "confirm",
        "gates",
        "decisions",
        "archive",
        "ledger",
        "sealed_test_score",
        "summary",
    )
    assert keys >= (
        {f"meta_harness/{name}" for name in meta_harness}
        | {f"modular_rsi/{name}" for name in modular_rsi}
        | {f"evolver/{name}" for name in evolver}
    )
    assert {key.split("/")[0] for key in keys} == set(registry.names())  # each in its folder
    jobs = {job.name for job in defs.resolve_all_job_defs()}
    assert jobs >= {
        name for algorithm in registry.names() for name in (algorithm, f"{algorithm}_finalize")
    }
    assert "start_experiment" in jobs
    assert result.returncode == 0, result.stderr


def test_candidate_keys_read_round_first_and_are_validated():
    assert parse_candidate_key(candidate_key(12, "c0")) == (12, "c0")
    assert str(PARTITIONS.key("exp-1.a", 3, "c0")) == "r003.c0|exp-1.a"
    for bad in ("r1.c0", "r001", "r001.c|0", "exp.r001"):
        with pytest.raises(ValueError, match="not a candidate key"):
            parse_candidate_key(bad)


def test_the_promotion_depends_on_every_round_of_its_own_experiment_only():
    graph = defs.resolve_asset_graph()
    parents = graph.get(key("promotion")).parent_keys
    assert key("scores") in parents
    mapping = graph.get_partition_mapping(key("promotion"), key("scores"))
    assert isinstance(mapping, dg.MultiToSingleDimensionPartitionMapping)
    sealed = graph.get(key("sealed_test_score"))
    assert sealed.group_name != graph.get(key("promotion")).group_name  # set apart


def test_the_driver_runs_the_experiment_as_runs_of_its_jobs(tmp_path, storage):
    experiment = _experiment(tmp_path / "home")
    name = experiment.config.experiment.name
    with instance_on(storage) as instance:
        state = drive_on(instance, experiment, say=lambda _: None)

        assert [r.status for r in state.rounds] == ["evaluated", "evaluated"]
        assert state.test is not None
        runs = instance.get_runs()
        assert sorted({r.job_name for r in runs}) == ["meta_harness", "meta_harness_finalize"]
        assert all(r.tags[EXPERIMENT_TAG] == name for r in runs)
        titles = {r.tags["flashrsi/about"] for r in runs}  # the Runs list names each step
        assert {f"{name} r000.c0 evaluate_seed", f"{name} promote"} <= titles
        keys = {str(k) for k in instance.get_materialized_partitions(key("trajectories"))}
        assert {str(PARTITIONS.key(name, k, "c0")) for k in (0, 1)} <= keys
        snapshot = _latest(instance, "snapshot", PARTITIONS.key(name, 1, "c0"))
        assert snapshot["snapshot_id"].value == state.rounds[1].snapshot_id
        assert "```diff" in snapshot["diff"].value
        assert snapshot["parent"].value.endswith("r000.c0%7Cmeta-harness-demo")
        assert "worker_activity" in snapshot and "worker_trajectory" in snapshot
        compared = _latest(instance, "paired_stats", PARTITIONS.key(name, 1, "c0"))
        assert compared["verdict"].value in {"credited", "regressed", "indecisive"}
        assert {"p_value_t", "p_value_sign", "p_value_permutation"} <= set(compared)
        assert "| p (sign / permutation) |" in compared["table"].value
        summarised = _latest(instance, "summary", name)
        summary = summarised["chart"].value
        assert "promoted" in summary and "meta-harness-demo" in summary
        assert summarised["explorer"].value == experiment_url(name)  # its tree in the explorer
        promotion = _latest(instance, "promotion", name)["chart"].value
        assert promotion.startswith(f"**`{name}`**: ")  # the chart names its experiment
        checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(key("sealed_test_score"), "evaluated_once_after_promotion")]
        )
        assert checks and all(c.status.value == "SUCCEEDED" for c in checks.values())
        adopted = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(key("scores"), "edit_adopted"), limit=50
        )
        first = _latest(instance, "sealed_test_score", name)["evaluated"].value
        tested = (experiment.paths.records / "meta_harness" / "test.jsonl").read_bytes()
        again = _materialize(
            instance, tmp_path / "home", "meta_harness_finalize", name,
            selection=[key("sealed_test_score")],
        )  # fmt: skip
        assert again.success
        read_back = _latest(instance, "sealed_test_score", name)["evaluated"].value
        assert "by this materialization" in first
        assert "read that one result back, it is not a second test" in read_back
        assert (experiment.paths.records / "meta_harness" / "test.jsonl").read_bytes() == tested
    value = tmp_path / "home" / name / "dagster" / "meta_harness-trajectories" / "round-001-c0"
    assert value.with_suffix(".parquet").exists()
    # each candidate's outcome on its partition of the partitioned `edit_adopted` check: the
    # round's own result, then the promotion's ranking, which names the materialization it
    # judged so that Dagster counts it for that partition
    latest: dict[str, dg.AssetCheckEvaluation] = {}
    for record in reversed(adopted):  # oldest first: a later one replaces an earlier
        event = record.event.dagster_event.event_specific_data if record.event else None
        if isinstance(event, dg.AssetCheckEvaluation):
            latest[event.partition] = event
    promoted = state.promotion.round
    assert {p: e.passed for p, e in latest.items()} == {
        str(PARTITIONS.key(name, k, "c0")): k in (0, promoted) for k in (0, 1)
    }
    judged = [e for e in latest.values() if e.target_materialization_data is not None]
    assert judged and all(e.severity == dg.AssetCheckSeverity.WARN for e in latest.values())


def test_the_sensor_requests_the_next_step_with_an_idempotent_run_key(tmp_path, storage):
    experiment = _experiment(tmp_path / "home")
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    with instance_on(storage) as instance:
        MH.register(instance, name, open_algorithm(experiment))
        with dg.build_sensor_context(
            instance=instance, resources={"experiments_home": ExperimentsResource.at(home)}
        ) as context:
            first = round_driver(context)
            again = round_driver(context)

    (request,) = first.run_requests
    assert request.run_key == f"{name}:evaluate_seed:r000.c0"
    assert request.job_name == "meta_harness"
    assert request.partition_key == str(PARTITIONS.key(name, 0, "c0"))
    assert request.tags[DRIVER_TAG] == "1"
    assert again.run_requests[0].run_key == request.run_key  # same state, same key


def test_previewing_the_nightly_schedule_creates_nothing_and_its_run_starts_the_experiment(
    tmp_path,
    storage,
):
    home = tmp_path / "home"
    with instance_on(storage) as instance:
        with dg.build_schedule_context(
            instance=instance,
            resources={
                "experiments_home": ExperimentsResource.at(home),
                "nightly": NightlyConfig(config_file=str(EXAMPLE)),
            },
            scheduled_execution_time=datetime(2026, 11, 30, 2, tzinfo=UTC),
        ) as context:
            request = nightly_evolution(context)

        name = request.tags[EXPERIMENT_TAG]
        assert name == "meta-harness-demo-nightly-20261130"
        assert not home.exists()  # a preview (or tick) writes nothing
        assert instance.get_dynamic_partitions(PARTITIONS.experiments.name) == []
        assert nightly_evolution.execution_timezone == "UTC"

        result = build_definitions(str(home)).resolve_job_def("start_experiment")
        result = result.execute_in_process(instance=instance, run_config=request.run_config)
        assert result.success
        assert (home / name / "run_meta.json").exists()
        assert instance.get_dynamic_partitions(PARTITIONS.experiments.name) == [name]


def test_the_start_job_creates_an_experiment_the_launchpad_way(tmp_path, storage):
    job = defs.resolve_job_def("start_experiment")
    ops = job.run_config_schema.config_type.fields["ops"].config_type.fields
    fields = ops["create_experiment"].config_type.fields["config"].config_type.fields
    assert fields["config_file"].default_value == "examples/meta_harness.yaml"

    home = str(tmp_path / "home")
    launch = {
        "config_file": str(EXAMPLE),
        "name": "from-ui",
        "overrides": ["--benchmark.limit", "3", "--algorithm.max_steps", "1"],
    }
    with instance_on(storage) as instance:
        result = (
            build_definitions(home)
            .resolve_job_def("start_experiment")
            .execute_in_process(
                instance=instance, run_config={"ops": {"create_experiment": {"config": launch}}}
            )
        )
        assert result.success
        candidates = instance.get_dynamic_partitions(PARTITIONS.candidates.name)
        assert candidates == ["r000.c0", "r001.c0"]
        experiments = ExperimentsResource.at(home)
        assert experiments.config("from-ui").algorithm.max_steps == 1
        assert experiments.next_step("from-ui").action == "evaluate_seed"

        broken = {
            **launch,
            "name": "broken",
            "overrides": ["--agent.llm.api_key", "${FLASHRSI_UNSET}"],
        }
        refused = (
            build_definitions(home)
            .resolve_job_def("start_experiment")
            .execute_in_process(
                instance=instance,
                run_config={"ops": {"create_experiment": {"config": broken}}},
                raise_on_error=False,
            )
        )
        assert not refused.success
        assert "agent.llm.api_key: ${FLASHRSI_UNSET} is not set" in _failure(refused)
        assert not (Path(home) / "broken").exists()  # the dry run refused it: nothing written

        instance.add_dynamic_partitions(PARTITIONS.experiments.name, ["nowhere"])
        missing = _materialize(instance, home, "meta_harness", PARTITIONS.key("nowhere", 0, "c0"))
    assert not missing.success
    assert "does not exist" in _failure(missing) and "start_experiment" in _failure(missing)


def test_promotion_and_the_sealed_test_mid_search_fail_and_change_nothing(tmp_path, storage):
    experiment = _experiment(tmp_path / "home", steps=2)
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    layout = Layout.of(experiment.paths.records)
    with instance_on(storage) as instance:
        MH.register(instance, name, open_algorithm(experiment))
        first = _materialize(instance, home, "meta_harness", PARTITIONS.key(name, 0, "c0"))
        assert first.success
        records = sorted(p.name for p in layout.folder.iterdir())
        requests = len(offline_server().requests)

        early = _materialize(instance, home, "meta_harness_finalize", name)
        sealed = _materialize(
            instance, home, "meta_harness_finalize", name, selection=[key("sealed_test_score")]
        )

    assert not early.success and not sealed.success
    assert "promotion refused: the search is not finished: round(s) 1, 2" in _failure(early)
    assert "the sealed test refused" in _failure(sealed)
    assert sorted(p.name for p in layout.folder.iterdir()) == records  # nothing written
    assert len(offline_server().requests) == requests  # not one model request, test or other


def test_rematerializing_a_rounds_trajectories_updates_the_round_and_re_ranks(tmp_path, storage):
    experiment = _experiment(tmp_path / "home", steps=1)
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    layout = Layout.of(experiment.paths.records)
    with instance_on(storage) as instance:
        MH.register(instance, name, open_algorithm(experiment))
        runs = [PARTITIONS.key(name, 0, "c0"), PARTITIONS.key(name, 1, "c0")]
        for partition in runs:
            assert _materialize(
                instance, home, "meta_harness", partition, tags={DRIVER_TAG: "1"}
            ).success
        assert _materialize(
            instance, home, "meta_harness_finalize", name, selection=[key("promotion")]
        ).success
        before = [s.id for s in experiment.snapshots.history()]
        promoted = json.loads(layout.promotion.read_text())

        # As from the asset page: `trajectories` of round 0 selected (the UI adds the assets
        # made with it), no driver tag.
        with_it = dg.AssetSelection.assets(key("trajectories")).required_multi_asset_neighbors()
        selected = list(with_it.resolve(defs.resolve_asset_graph()))
        again = _materialize(instance, home, "meta_harness", runs[0], selection=selected)
        assert again.success
        title = instance.get_run_by_id(again.run_id).tags["flashrsi/about"]
        assert title == f"{name} r000.c0 by hand"
        updated = {
            e.asset_key for e in again.all_events if e.event_type_value == "ASSET_MATERIALIZATION"
        }
        assert {
            key(n) for n in ("trajectories", "scores", "failure_map", "paired_stats")
        } <= updated
        status = instance.get_latest_materialization_event(key("promotion"))
        promotion_time = status.timestamp
        scores_time = instance.get_latest_materialization_event(key("scores")).timestamp
        assert scores_time > promotion_time  # the promotion is older than a round it ranks
        step = ExperimentsResource.at(home).next_step(name)

    assert [s.id for s in experiment.snapshots.history()] == before  # no new snapshot
    assert len(list(layout.folder.glob("round-000-dev.replaced-*.jsonl"))) == 1
    # The simulator is deterministic: the same scores, the same ranking, so the promotion is
    # still current and the sealed test comes next (a changed ranking: tests/algorithms).
    assert json.loads(layout.promotion.read_text()) == promoted
    assert step.action == "sealed_test"


def test_flashrsi_run_then_resume(tmp_path, home_storage):
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
    if home_storage is not None:  # the runs are in the database the setting names
        runs = rows(home_storage, "SELECT pipeline_name, status FROM runs")
        assert {job for job, _ in runs} == {"meta_harness", "meta_harness_finalize"}
        assert len(runs) >= 3 and {status for _, status in runs} == {"SUCCESS"}
        assert not (tmp_path / "home" / ".dagster" / "history").exists()

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
    return ExperimentsResource.at(home).algorithm("meta-harness-demo", log=lambda _: None)


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
    sa, sb = a.read_state(), b.read_state()
    assert [(r.round, r.status, r.dev_score) for r in sa.rounds] == [
        (r.round, r.status, r.dev_score) for r in sb.rounds
    ]
    tree = lambda h, s: h.experiment.snapshots.get(s).tree  # noqa: E731
    assert tree(a, sa.promotion.snapshot_id) == tree(b, sb.promotion.snapshot_id)
    assert sa.test.test_score == sb.test.test_score
    for k in range(3):  # every dev rollout exactly once
        ids = [t.task_id for t in RolloutRecord(b.layout.rollouts(k), None).load()]
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 4


@sqlite_only
def test_a_nightly_experiments_summary_compares_it_with_the_night_before(tmp_path, storage):
    home = tmp_path / "home"
    with instance_on(storage) as instance:
        for night in ("meta-harness-demo-nightly-20261129", "meta-harness-demo-nightly-20261130"):
            drive_on(instance, _experiment(home, steps=1, name=night), say=lambda _: None)
        summary = _latest(instance, "summary", "meta-harness-demo-nightly-20261130")

    assert summary["previous_night"].value == "meta-harness-demo-nightly-20261129"
    assert summary["test_change_vs_previous_night"].value == 0.0  # same config, same simulator
    # The ledger beside it: the declared trade-off rule, each decision, the baseline.
    assert summary["trade_off_rule"].value == "score lift >= +0"
    assert "| adopt | experiment |" in summary["decisions"].value
    assert "(adopt, meta_harness/promotion@" in summary["baseline"].value
