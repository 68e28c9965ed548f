"""The Evolver through a real Dagster instance and the real offline simulator: its assets and
grid, the cold-start partition, the order kept when a step is asked for out of turn, and the
offline demo driven through its jobs by the same step -> run mapping the sensor uses."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.evolver.defs.assets import PARTITIONS, key
from flashrsi_dagster.algorithms.evolver.records import node_id
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.deployment.cli_driver import drive_on
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.in_process import InProcessRuns
from flashrsi_dagster.deployment.sensors import round_driver
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.experiment.keys import candidate_key
from flashrsi_dagster.llm.endpoints import offline_server
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.describe import BEHAVIOUR_CHECK
from flashrsi_dagster.orchestration.resources import ExperimentsResource
from tests.dagster_instances import instance_on, sqlite_only

EXAMPLE = Path(__file__).parents[4] / "examples" / "evolver.yaml"
EVOLVER = defs_for("evolver")
ROUND = ("failure_map", "plan", "snapshot", "screen", "confirm", "gates", "decisions")
FINAL = ("archive", "ledger", "sealed_test_score")
NOTHING_TO_DIAGNOSE = [{"text": '{"diagnoses": []}'}]
SMALL = [
    *("--benchmark.split_counts", "{train: 12, dev: 0, test: 12}"),
    *("--algorithm.max_why_per_round", "1", "--algorithm.candidates_per_why", "2"),
    *("--algorithm.recombinations_per_round", "0", "--algorithm.patience", "1"),
]
"""The demo cut down: 12 train tasks, one WHY x two candidates a round, patience 1."""


def _experiment(tmp_path: Path, *overrides: str):
    home = ["--experiment.home", str(tmp_path / "home")]
    return open_experiment(load_config(EXAMPLE, [*home, *overrides]))


def _scripted_worker(name: str, replies: list[dict]) -> list[str]:
    """A Worker on the simulator's script `name` (the override that names it)."""
    offline_server().add_script(name, replies)
    return ["--algorithm.worker.llm.model", f"simulator/script:{name}"]


def _materialized(instance: dg.DagsterInstance) -> dict[str, set[str]]:
    return {n: instance.get_materialized_partitions(key(n)) for n in (*ROUND, *FINAL)}


def _metadata(instance: dg.DagsterInstance, name: str, partition) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key(name), asset_partitions=[str(partition)]), limit=1
    ).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def test_the_grid_is_each_rounds_steps_and_the_assets_are_keyed_evolver(tmp_path, storage):
    experiment = _experiment(tmp_path)
    name, c = experiment.config.experiment.name, experiment.config.algorithm
    evolver = open_algorithm(experiment)
    definitions = build_definitions(str(tmp_path / "home"))
    graph = definitions.resolve_asset_graph()
    with instance_on(storage) as instance:
        EVOLVER.register(instance, name, evolver)
        candidates = instance.get_dynamic_partitions(PARTITIONS.candidates.name)

    whys = range(1, c.max_why_per_round + 1)
    designs = [f"w{i}c{j}" for i in whys for j in range(1, c.candidates_per_why + 1)]
    merges = [f"x{n}" for n in range(1, c.recombinations_per_round + 1)]
    slots = ("vanilla", "diagnose", *designs, *merges, "decide")
    assert evolver.slots() == slots and evolver.rounds() == c.max_rounds + 1  # + the cold start
    # round 0 the cold start alone, each later round its steps (no vanilla): no dead slot
    each_round = {candidate_key(r, s) for r in range(1, c.max_rounds + 1) for s in slots[1:]}
    assert set(candidates) == {candidate_key(0, "vanilla"), *each_round}
    assert {k.to_user_string() for k in graph.get_all_asset_keys() if k.path[0] == "evolver"} == {
        f"evolver/{n}" for n in (*ROUND, *FINAL, "summary")
    }
    round_job, finalize = (definitions.resolve_job_def(j.name) for j in EVOLVER.jobs)
    assert round_job.name == "evolver" and finalize.name == "evolver_finalize"
    assert round_job.asset_layer.selected_asset_keys == {key(n) for n in ROUND}
    assert finalize.asset_layer.selected_asset_keys == {key(n) for n in FINAL}
    checks = {c.name for c in graph.get(key("sealed_test_score")).check_keys}
    assert checks == {"evaluated_once_after_termination", "splits_disjoint"}
    # no promote step: the sealed test's run is the whole finalize job (archive, ledger too)
    sealed = EVOLVER.request(name, Step("sealed_test"))
    assert sealed is not None and sealed.job_name == finalize.name
    assert sealed.asset_selection is None and sealed.partition_key == name


def test_the_sensor_asks_for_the_cold_start_first(tmp_path, storage):
    experiment = _experiment(tmp_path)
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    with instance_on(storage) as instance:
        EVOLVER.register(instance, name, open_algorithm(experiment))
        with dg.build_sensor_context(
            instance=instance, resources={"experiments_home": ExperimentsResource.at(home)}
        ) as context:
            (request,) = round_driver(context).run_requests

    assert request.job_name == "evolver"
    assert request.partition_key == str(PARTITIONS.key(name, 0, "vanilla"))
    assert request.run_key == f"{name}:cold_start:r000.vanilla"


@sqlite_only
def test_the_cold_start_partition_makes_vanilla_its_k_runs_and_the_first_failure_map(
    tmp_path, storage
):
    experiment = _experiment(tmp_path, *_scripted_worker("ev-cold", NOTHING_TO_DIAGNOSE * 10))
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    vanilla = PARTITIONS.key(name, 0, "vanilla")
    with instance_on(storage) as instance:
        EVOLVER.register(instance, name, open_algorithm(experiment))
        runs = InProcessRuns(instance, home)
        assert runs.execute("evolver", name, Step("cold_start", 0, "vanilla")), runs.failure
        record = (experiment.paths.records / "evolver" / "cold_start.json").read_bytes()
        assert runs.execute("evolver", name, Step("cold_start", 0, "vanilla")), runs.failure
        made = _materialized(instance)
        confirm = _metadata(instance, "confirm", vanilla)
        failure_map = _metadata(instance, "failure_map", vanilla)
        snapshot = _metadata(instance, "snapshot", vanilla)
        summary = instance.get_latest_materialization_event(key("summary"))
        assert summary is not None
        next_step = summary.asset_materialization.metadata["next_step"].value

    assert {n: p for n, p in made.items() if p} == {
        n: {str(vanilla)} for n in ("snapshot", "confirm", "failure_map")
    }
    config = experiment.config
    train, k = config.benchmark.split_counts.train, config.algorithm.k  # type: ignore[union-attr]
    assert confirm["rollouts"] == train * k and confirm["eval_set"] == "train/e1"
    assert {"stability_ledger", "why_counts", "diagnoses", "diagnose_worker_status"} <= set(
        failure_map
    )
    assert "| task | rate over K | passes |" in failure_map["stability_ledger"]
    assert snapshot["status"] == "vanilla" and snapshot["parent"] == "none"
    assert next_step == "diagnose (round 1, diagnose)"
    # the second run read the cold start back: the record is the one the first run wrote
    assert (experiment.paths.records / "evolver" / "cold_start.json").read_bytes() == record


@sqlite_only
def test_a_worker_that_cannot_diagnose_fails_the_cold_start_and_it_leaves_no_record(
    tmp_path, storage
):
    experiment = _experiment(tmp_path, "--algorithm.worker.llm.model", "simulator/worker")
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    with instance_on(storage) as instance:
        EVOLVER.register(instance, name, open_algorithm(experiment))
        runs = InProcessRuns(instance, home)
        assert not runs.execute("evolver", name, Step("cold_start", 0, "vanilla"))
        made = _materialized(instance)

    assert "DiagnosisFailed" in (runs.failure or "")
    assert not (experiment.paths.records / "evolver" / "cold_start.json").exists()
    assert all(not partitions for partitions in made.values())


@sqlite_only
@pytest.mark.parametrize(
    ("step", "refusal"),
    [
        (Step("diagnose", 1, "diagnose"), "cold_start (round 0, vanilla) comes first"),
        (Step("candidate", 1, "w1c1"), "cold_start (round 0, vanilla) comes first"),
        (Step("decide", 1, "decide"), "cold_start (round 0, vanilla) comes first"),
        (Step("sealed_test"), "the search is not finished"),
        # not registered (no step uses them), added by hand as the UI allows
        (Step("candidate", 1, "vanilla"), "r001.vanilla|evolver-demo is not a candidate"),
        (Step("candidate", 0, "decide"), "r000.decide|evolver-demo is not a candidate"),
    ],
)
def test_a_step_out_of_turn_fails_and_writes_nothing(tmp_path, step, refusal, storage):
    experiment = _experiment(tmp_path)
    name, home = experiment.config.experiment.name, str(tmp_path / "home")
    with instance_on(storage) as instance:
        EVOLVER.register(instance, name, open_algorithm(experiment))
        if step.round is not None:
            by_hand = candidate_key(step.round, step.slot or "")
            instance.add_dynamic_partitions(PARTITIONS.candidates.name, [by_hand])
        runs = InProcessRuns(instance, home)
        assert not runs.execute("evolver", name, step)
        made = _materialized(instance)
        summary = instance.get_materialized_partitions(key("summary"))

    assert refusal in (runs.failure or "")
    assert not (experiment.paths.records / "evolver").exists()
    assert all(not partitions for partitions in made.values()) and not summary


@sqlite_only
def test_the_offline_demo_runs_through_dagster_one_step_per_partition(tmp_path, storage):
    experiment = _experiment(tmp_path, *SMALL)
    name = experiment.config.experiment.name
    with instance_on(storage) as instance:
        state = drive_on(instance, experiment, say=lambda _: None)
        made = _materialized(instance)
        rounds = instance.get_runs(filters=dg.RunsFilter(job_name="evolver"))
        (final,) = instance.get_runs(filters=dg.RunsFilter(job_name="evolver_finalize"))
        planned = [(rd.plan.round, s) for rd in state.rounds if rd.plan for s in rd.plan.slots]
        w1c1 = _metadata(instance, "snapshot", PARTITIONS.key(name, 1, "w1c1"))
        gates = _metadata(instance, "gates", PARTITIONS.key(name, 1, "w1c1"))
        decided = _metadata(instance, "decisions", PARTITIONS.key(name, 1, "decide"))
        checks = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(key("sealed_test_score"), "evaluated_once_after_termination"), limit=1
        )
        behaviour = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(key("confirm"), BEHAVIOUR_CHECK), limit=50
        )
        adopted = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(key("gates"), "edit_adopted"), limit=50
        )
        # the UI rematerializes one asset of a candidate: the step is read back, nothing redone
        before = _materialized(instance)
        gates_only = build_definitions(str(tmp_path / "home")).resolve_job_def("evolver")
        again = gates_only.execute_in_process(
            instance=instance,
            partition_key=PARTITIONS.key(name, 1, "w1c1"),
            asset_selection=[key("gates")],
        )
        rematerialized = instance.fetch_materializations(key("gates"), limit=100).records
        screens = instance.fetch_materializations(key("screen"), limit=100).records
        after = _materialized(instance)

    at = lambda r, slot: str(PARTITIONS.key(name, r, slot))  # noqa: E731
    nodes = {(n.round, n.slot): n for n in open_algorithm(experiment).nodes(state)}
    assert planned and set(nodes) == set(planned)  # the demo's round 1 has candidates
    diagnosed = {at(rd.plan.round, "diagnose") for rd in state.rounds if rd.plan}
    assert made["snapshot"] == {at(0, "vanilla")} | {at(*n) for n in nodes}
    assert made["screen"] == {at(*n) for n, node in nodes.items() if node.screen}
    assert made["confirm"] == {at(0, "vanilla")} | {
        at(*n) for n, node in nodes.items() if node.confirm_mean is not None
    }
    assert made["gates"] == {at(*n) for n in nodes}
    assert made["failure_map"] == {at(0, "vanilla")} | diagnosed
    assert made["plan"] == diagnosed
    assert made["decisions"] == {at(rd.plan.round, "decide") for rd in state.rounds if rd.plan}
    assert all(made[n] == {name} for n in FINAL)  # one finalize run made all three
    assert all(r.is_success for r in [*rounds, final])
    assert len(rounds) == 1 + sum(2 + len(rd.plan.slots) for rd in state.rounds if rd.plan)
    assert "r000.vanilla" in str(w1c1["parent"]) and "diff" in w1c1
    assert {"gates", "paired", "credited_2sigma", "small_n"} <= set(gates)
    assert f"evolver/{node_id(1, 'w1c1')}" in decided["ledger"]
    assert checks and checks[0].event.dagster_event.event_specific_data.passed
    events = [r.event.dagster_event.event_specific_data for r in behaviour]
    judged = [e for e in events if isinstance(e, dg.AssetCheckEvaluation)]  # not just planned
    # every candidate judged against its parent (vanilla and a culled one pass with a note);
    # the demo's honest candidates are not flagged
    assert {j.metadata["partition"].value for j in judged} == {at(0, "vanilla")} | {
        at(*n) for n in nodes
    }
    assert all(j.passed for j in judged)
    # each candidate's outcome on its own partition of the `edit_adopted` check (partitioned):
    # passed where it passed every gate, else a warning naming the state it stopped in
    outcomes = {
        e.partition: (e.passed, e.severity)
        for r in adopted
        if isinstance(e := r.event.dagster_event.event_specific_data, dg.AssetCheckEvaluation)
    }
    kept = ("in_library", "promoted_to_baseline")
    assert outcomes == {
        at(*n): (node.state in kept, dg.AssetCheckSeverity.WARN) for n, node in nodes.items()
    }
    assert again.success and after == before
    assert len(rematerialized) == len(nodes) + 1 and len(screens) == len(made["screen"])
