"""ModularRSI through a real Dagster instance: every step a run of its job, requested by the
same step -> run mapping the round driver sensor uses; the branch grid's partitions; the
order kept when the UI asks out of turn."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.modular_rsi.defs.assets import PARTITIONS, key
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.in_process import InProcessRuns
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.describe import BEHAVIOUR_CHECK
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from tests.dagster_instances import instance_on, sqlite_only

EXAMPLE = Path(__file__).parents[4] / "examples" / "modular_rsi.yaml"
MRSI = defs_for("modular_rsi")


MODULES = (
    "agent_loop",
    "tool_use",
    "observation_management",
    "context_management",
    "task_completion_detection",
)


SMALL = (  # one batch of three tasks per module, one rollout, one edit: still every phase
    *("--algorithm.edit_budget", "1", "--algorithm.num_rollouts", "1"),
    *("--benchmark.split_counts.train", "3", "--benchmark.split_counts.test", "3"),
)
"""The example cut down where a test runs it to its end: each step is still a run of the job
(branches, the integration round, promotion, the sealed test); there are fewer of them."""


def _experiment(tmp_path: Path, *overrides: str):
    home = ["--experiment.home", str(tmp_path / "home")]
    return open_experiment(load_config(EXAMPLE, [*home, *overrides]))


def test_the_sensor_asks_for_every_modules_first_branch_step_at_once(tmp_path, storage):
    experiment = _experiment(tmp_path)
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    with instance_on(storage) as instance:
        MRSI.register(instance, name, open_algorithm(experiment))
        with dg.build_sensor_context(
            instance=instance, resources={"experiments_home": ExperimentsResource.at(home)}
        ) as context:
            requests = round_driver(context).run_requests
        candidates = instance.get_dynamic_partitions(PARTITIONS.candidates.name)
    request = requests[0]  # the next step first; the other branches share nothing with it
    assert [r.run_key for r in requests] == [f"{name}:branch:r000.{module}" for module in MODULES]
    assert request.job_name == "modular_rsi"
    assert request.partition_key == str(PARTITIONS.key(name, 0, "agent_loop"))
    assert request.run_key == f"{name}:branch:r000.agent_loop"
    # the grid: every module's steps (2 batches) and the integration rounds, registered up front
    assert {"r000.agent_loop", "r001.task_completion_detection", "r001.integration"} <= set(
        candidates
    )


@sqlite_only
def test_the_whole_job_runs_through_dagster_and_its_grid_shows_each_branch(tmp_path, storage):
    experiment = _experiment(tmp_path, *SMALL)
    name = experiment.config.experiment.name
    with instance_on(storage) as instance:
        state = drive_on(instance, experiment, say=lambda _: None)
        gates = instance.get_materialized_partitions(key("gates"))
        runs = instance.get_runs(filters=dg.RunsFilter(job_name="modular_rsi"))
        finals = instance.get_runs(filters=dg.RunsFilter(job_name="modular_rsi_finalize"))
        promoted = instance.get_materialized_partitions(key("promotion"))
        checked = instance.get_latest_materialization_event(key("final_check"))
        tested = instance.get_materialized_partitions(key("sealed_test_score"))
        event = instance.get_latest_materialization_event(dg.AssetKey(["modular_rsi", "gates"]))
        behaviour = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(key("gates"), BEHAVIOUR_CHECK), limit=100
        )
        adopted = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(key("gates"), "edit_adopted"), limit=100
        )
    assert state.test is not None and state.promotion is not None
    assert promoted == {name} and tested == {name}
    assert checked is not None
    final = checked.asset_materialization.metadata
    assert final["runtime_errors"].value == "none" and final["integration_round"].value == 0
    expected = {str(PARTITIONS.key(name, r.round, r.slot)) for r in state.steps.values()}
    assert gates == expected and len(runs) == len(state.steps)
    assert {
        str(PARTITIONS.key(name, 0, "agent_loop")),
        str(PARTITIONS.key(name, 0, "integration")),
    } <= gates
    assert all(r.is_success for r in [*runs, *finals])
    assert event is not None  # each step describes its gates (the review's text among them)
    metadata = event.asset_materialization.metadata
    assert {"outcome", "gates", "review_text", "continues_from"} <= set(metadata)
    # every step judged (a branch candidate against its batch on the same task, or a note);
    # the demo's honest candidates are not flagged
    events = [r.event.dagster_event.event_specific_data for r in behaviour]
    judged = [e for e in events if isinstance(e, dg.AssetCheckEvaluation)]  # not just planned
    assert {j.metadata["partition"].value for j in judged} == expected
    assert all(j.passed for j in judged)
    # each partition's outcome, where the grid's green says only that the step ran: a
    # rejected (or empty) edit warns, with its reason
    outcomes = {
        e.metadata["partition"].value: (e.passed, e.severity, e.metadata["outcome"].value)
        for r in adopted
        if isinstance(e := r.event.dagster_event.event_specific_data, dg.AssetCheckEvaluation)
    }
    steps = {str(PARTITIONS.key(name, r.round, r.slot)): r.status for r in state.steps.values()}
    assert outcomes == {
        p: (status == "accepted", dg.AssetCheckSeverity.WARN, status) for p, status in steps.items()
    }
    assert {"accepted", "rejected"} <= set(steps.values())  # both kinds shown
    # a partitioned check: each result is its partition's (the check's own grid), and a
    # rejection says "warning" in words, where Dagster's label for it is "Failed"
    evaluations = [
        e
        for r in adopted
        if isinstance(e := r.event.dagster_event.event_specific_data, dg.AssetCheckEvaluation)
    ]
    assert {e.partition for e in evaluations} == set(steps)
    for e in evaluations:
        said = "passed: " if e.passed else "warning: "
        assert e.metadata["result"].value.startswith(said) and e.description.startswith(said)


@sqlite_only
def test_the_promotion_and_the_sealed_test_refuse_mid_search_and_write_nothing(tmp_path, storage):
    experiment = _experiment(tmp_path)
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    records = experiment.paths.records / "modular_rsi"
    with instance_on(storage) as instance:
        MRSI.register(instance, name, open_algorithm(experiment))
        runs = InProcessRuns(instance, home)
        assert runs.execute("modular_rsi", name, Step("branch", 0, "agent_loop"))
        assert not runs.execute("modular_rsi", name, Step("promote"))
        assert "promotion refused: the search is not finished" in (runs.failure or "")
        assert not runs.execute("modular_rsi", name, Step("sealed_test"))
        assert not runs.execute("modular_rsi", name, Step("branch", 1, "tool_use"))
        assert "comes first" in (runs.failure or "")
    assert not (records / "promotion.json").exists() and not (records / "test.json").exists()
