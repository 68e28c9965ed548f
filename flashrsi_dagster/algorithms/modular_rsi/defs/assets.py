"""ModularRSI as assets, keyed `modular_rsi/<name>`.

Per candidate — a module's branch step (round = epoch x batch) or an integration round (slot
`integration`) — one step makes together: `trajectories` (the batch's rollouts on the version
the step started from; an integration round's full check), `memory` (the module's successes
so far), `findings` (the analysis, ranked), `snapshot` (the candidate with its diff against
the version it came from, linked to that partition) and `gates` (scope, compile, review with
its text, execution). Per experiment: `integration` (each branch's final version, the merge
and repair rounds) and `final_check` (the last accepted merge on every evolution task) ->
`promotion` -> `sealed_test_score`, and `summary`, reported by every step.

The algorithm lives in `flashrsi_dagster.algorithms.modular_rsi`; these functions open the
experiment named by the partition, call one step, and describe what its records say. A step
already done is read back, never redone; one asked for out of turn fails and changes nothing.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from flashrsi_dagster.algorithms.modular_rsi.ledger_entries import previous_merge
from flashrsi_dagster.algorithms.modular_rsi.modules import INTEGRATION
from flashrsi_dagster.algorithms.modular_rsi.records import FindingsRecord, StepRecord
from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.algorithms.modular_rsi.views import (
    findings_markdown,
    gates_markdown,
    memory_markdown,
    steps_markdown,
)
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.orchestration import describe
from flashrsi_dagster.orchestration.context import (
    candidate_algorithm,
    experiment_algorithm,
    refusing_out_of_turn,
)
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.records import Trajectory, read_optional
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.behaviour import BehaviourSignal, behaviour

PREFIX = "modular_rsi"
PARTITIONS = AlgorithmPartitions.of(PREFIX)
GROUP, SEALED_GROUP = "modular_rsi", "modular_rsi_sealed_test"
RESOURCES = {"experiments_home"}


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([PREFIX, name])


SUMMARY = dg.AssetSpec(
    key("summary"),
    group_name=GROUP,
    partitions_def=PARTITIONS.experiments,
    deps=[dg.AssetDep(key("gates"), partition_mapping=PARTITIONS.experiment_dependency())],
    description="The experiment at a glance: every branch step and integration round with "
    "its outcome and reason, the promotion and the sealed test. Reported by every step.",
)


@dg.multi_asset(
    outs={
        "trajectories": dg.AssetOut(
            key=key("trajectories"),
            kinds={"parquet"},
            description="The batch's rollouts (num_rollouts x tasks) on the version the step "
            "started from; for an integration round, the full check on every evolution task.",
        ),
        "memory": dg.AssetOut(
            key=key("memory"),
            description="The module's earliest success of each task so far (its own batches "
            "only; branches share no memory).",
        ),
        "findings": dg.AssetOut(
            key=key("findings"),
            description="The Worker's findings, merged per file and ranked by distinct "
            "supporting tasks; the files chosen for the edit.",
        ),
        "snapshot": dg.AssetOut(
            key=key("snapshot"),
            kinds={"git"},
            description="The candidate the edit committed, its diff against the version it "
            "came from, and what the Worker did.",
        ),
        "gates": dg.AssetOut(
            key=key("gates"),
            description="Scope, compile, review (with the reviewer's text) and execution, in "
            "order, and the step's outcome: the version the branch continues from.",
        ),
    },
    internal_asset_deps={
        "trajectories": set(),
        "memory": {key("trajectories")},
        "findings": {key("trajectories"), key("memory")},
        "snapshot": {key("findings")},
        "gates": {key("snapshot")},
    },
    partitions_def=PARTITIONS.grid,
    group_name=GROUP,
    can_subset=False,
    required_resource_keys=RESOURCES,
    check_specs=[
        describe.content_check_spec(key("snapshot")),
        describe.behaviour_check_spec(key("gates")),
        describe.adopted_check_spec(key("gates"), PARTITIONS.grid),
    ],
)
def step(context: dg.AssetExecutionContext) -> Iterator:
    """One branch step or integration round: run it (or read it back), then describe it."""
    algorithm, name, k, slot = candidate_algorithm(context)
    assert isinstance(algorithm, ModularRSI)
    with refusing_out_of_turn():
        record: StepRecord = (
            algorithm.integrate(k) if slot == INTEGRATION else algorithm.branch_step(slot, k)
        )
    rollouts = algorithm.step_rollouts(slot, k)
    frame = scores_frame(rollouts)
    yield dg.Output(
        frame, output_name="trajectories", metadata=_trajectories(record, frame, rollouts)
    )
    memory = {} if slot == INTEGRATION else algorithm.memory(slot, before=k + 1)
    yield dg.Output(
        {task: t.snapshot_id for task, t in memory.items()},
        output_name="memory",
        metadata={"tasks": len(memory), "memory": dg.MetadataValue.md(memory_markdown(memory))},
    )
    found = read_optional(algorithm.layout.step(slot, k, "findings"), FindingsRecord)
    yield dg.Output(
        found.model_dump(mode="json") if found else {},
        output_name="findings",
        metadata=_findings(found, algorithm, slot, k),
    )
    yield dg.Output(
        _snapshot_info(record), output_name="snapshot", metadata=_snapshot(algorithm, name, record)
    )
    yield dg.Output(
        record.model_dump(mode="json", include={"status", "reason", "gates", "current_id"}),
        output_name="gates",
        metadata=_gates(algorithm, record),
    )
    verdict = read_optional(algorithm.layout.step(slot, k, "content"), ContentVerdict)
    unchecked = "no candidate reached the content gate"
    yield describe.content_check(verdict, key("snapshot"), str(context.partition_key), unchecked)
    where = str(context.partition_key)
    yield describe.behaviour_check(_behaviour(algorithm, record), key("gates"), where)
    adopted = record.status == "accepted"
    yield describe.adopted_check(record.status, record.reason, adopted, key("gates"), where)
    context.log_event(_summary(algorithm))


def _behaviour(algorithm: ModularRSI, record: StepRecord) -> BehaviourSignal | str:
    """A branch candidate's execution rollout against the batch's on the version it came
    from (the same task); a merge's full check against the previous merge's."""
    if record.candidate_id is None:
        return "no candidate was committed"
    thresholds = algorithm.experiment.config.behaviour
    if record.slot != INTEGRATION:
        path = algorithm.layout.execution(record.slot, record.round)
        ran = final_trajectories(RolloutRecord(path), algorithm.settings.max_infra_reruns)
        batch = algorithm.step_rollouts(record.slot, record.round)
        return behaviour(ran, batch, thresholds) if ran else "no execution rollout"
    if record.check is None:
        return "no full check: a gate failed first"
    previous = previous_merge(algorithm.read_state(), record)
    if previous is None:
        return "the first merge: the decision ledger compares it with the seed at the promotion"
    merged = algorithm.step_rollouts(INTEGRATION, record.round)
    return behaviour(merged, algorithm.step_rollouts(INTEGRATION, previous.round), thresholds)


def _trajectories(record: StepRecord, frame, rollouts: list[Trajectory]) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "version": record.parent_id,
        "rollouts": len(frame),
        **describe.figures(score=float(frame["score"].mean()) if len(frame) else None),
    }
    empty = "_no rollouts (the batch failed as a whole)_"
    return metadata | describe.rollout_preview(frame, rollouts, empty)


def _findings(found: FindingsRecord | None, algorithm: ModularRSI, slot: str, k: int):
    analysis = describe.worker(algorithm.layout.step(slot, k, "analysis"))
    if found is None:
        what = "the merge has no analysis" if slot == INTEGRATION else "no analysis on record"
        return {"findings": 0, "table": dg.MetadataValue.md(f"_{what}_"), **analysis}
    return {
        "findings": len(found.findings),
        "targets": ", ".join(found.targets) or "-",
        "batch_error": found.batch_error or "-",
        "table": dg.MetadataValue.md(findings_markdown(found)),
        **{f"analysis_{k_}": v for k_, v in analysis.items()},
    }


def _snapshot_info(record: StepRecord) -> dict[str, Any]:
    return {
        "round": record.round,
        "slot": record.slot,
        "status": record.status,
        "snapshot_id": record.candidate_id,
        "parent_id": record.parent_id,
        "reason": record.reason,
    }


def _snapshot(algorithm: ModularRSI, name: str, record: StepRecord) -> dict[str, Any]:
    info = _snapshot_info(record)
    if record.round > 0:
        info["parent_round"] = record.round - 1  # the branch's previous step made the parent
    store = algorithm.experiment.snapshots
    metadata = describe.snapshot(store, info, PARTITIONS, name, key("snapshot"), record.slot)
    if record.round == 0:
        metadata["parent"] = "the seed snapshot"
    metadata.update(describe.worker(algorithm.layout.step(record.slot, record.round, "worker")))
    return metadata


def _gates(algorithm: ModularRSI, record: StepRecord) -> dict[str, Any]:
    review = read_optional(algorithm.layout.step(record.slot, record.round, "review"), Trajectory)
    metadata: dict[str, Any] = {
        "outcome": record.status,
        "reason": record.reason,
        "continues_from": record.current_id,
        "gates": dg.MetadataValue.md(gates_markdown(record.gates)),
        "review_text": review.answer if review and review.answer else "-",
    }
    if record.check is not None:
        metadata.update(
            full_check_runtime_errors=len(record.check.runtime_errors),
            **describe.figures(full_check_score=record.check.score),
        )
    return metadata


def _summary(algorithm: ModularRSI) -> dg.AssetMaterialization:
    state = algorithm.read_state()
    metadata: dict[str, Any] = {
        "steps": dg.MetadataValue.md(steps_markdown(state)),
        "accepted": sum(r.status == "accepted" for r in state.steps.values()),
        "rejected": sum(r.status == "rejected" for r in state.steps.values()),
    }
    if state.promotion:
        metadata["promoted"] = f"{state.promotion.snapshot_id[:12]} ({state.promotion.source})"
    if state.test:
        metadata.update(describe.figures(test_score=state.test.test_score))
    return describe.summary_event(algorithm.experiment, SUMMARY.key, metadata)


@dg.multi_asset(
    outs={
        "integration": dg.AssetOut(
            key=key("integration"),
            description="Each module's final branch version, and the merge and repair rounds "
            "with their gates and outcomes.",
        ),
        "final_check": dg.AssetOut(
            key=key("final_check"),
            kinds={"parquet"},
            description="The final full check: the last accepted merge run on every evolution "
            "task (empty when nothing was merged); it decides the promotion.",
        ),
    },
    partitions_def=PARTITIONS.experiments,
    group_name=GROUP,
    deps=[dg.AssetDep(key("gates"), partition_mapping=PARTITIONS.experiment_dependency())],
    internal_asset_deps={
        "integration": {key("gates")},
        "final_check": {key("gates"), key("integration")},
    },
    can_subset=False,
    required_resource_keys=RESOURCES,
)
def integration(context: dg.AssetExecutionContext) -> Iterator:
    """The integration's result and its final full check, read from the records."""
    algorithm, _ = experiment_algorithm(context)
    assert isinstance(algorithm, ModularRSI)
    state = algorithm.read_state()
    seed = algorithm.seed().id
    branches = {m: state.current(m, algorithm.plan.branch_steps, seed) for m in algorithm.modules}
    rounds = state.branch(INTEGRATION)
    yield dg.Output(
        {"branches": branches, "rounds": [r.model_dump(mode="json") for r in rounds]},
        output_name="integration",
        metadata={
            "changed_branches": ", ".join(m for m in algorithm.modules if state.changed(m))
            or "none",
            "rounds": dg.MetadataValue.md(steps_markdown(state, slots=(INTEGRATION,))),
        },
    )
    last = next((r for r in reversed(rounds) if r.check is not None), None)
    rollouts = algorithm.step_rollouts(INTEGRATION, last.round) if last else []
    metadata: dict[str, Any] = {"checked": "no merge was accepted" if last is None else "yes"}
    if last is not None and last.check is not None:
        metadata.update(
            version=last.check.snapshot_id,
            integration_round=last.round,
            runtime_errors=", ".join(last.check.runtime_errors) or "none",
            failed=len(last.check.failed),
            **describe.figures(score=last.check.score),
        )
    yield dg.Output(scores_frame(rollouts), output_name="final_check", metadata=metadata)


@dg.asset(
    key=key("promotion"),
    partitions_def=PARTITIONS.experiments,
    group_name=GROUP,
    deps=[key("final_check")],
    required_resource_keys=RESOURCES,
)
def promotion(context: dg.AssetExecutionContext) -> Iterator:
    """The version the integration leaves (the last merge that runs on every evolution task,
    else the first that did, else the seed), once every step is done. Frozen."""
    algorithm, _ = experiment_algorithm(context)
    assert isinstance(algorithm, ModularRSI)
    with refusing_out_of_turn():
        chosen = algorithm.promote()
    yield dg.Output(
        chosen.model_dump(mode="json"),
        metadata={"snapshot_id": chosen.snapshot_id, "source": chosen.source, "why": chosen.reason},
    )
    context.log_event(_summary(algorithm))


@dg.asset(
    key=key("sealed_test_score"),
    partitions_def=PARTITIONS.experiments,
    group_name=SEALED_GROUP,
    kinds={"sealed"},
    deps=[promotion],
    required_resource_keys=RESOURCES,
    check_specs=describe.sealed_check_specs(key("sealed_test_score"), gap=False),
)
def sealed_test_score(context: dg.AssetExecutionContext) -> Iterator:
    """The promoted version on the sealed test split, once; later materializations read it."""
    algorithm, name = experiment_algorithm(context)
    assert isinstance(algorithm, ModularRSI)
    read_back = algorithm.read_state().test is not None
    with refusing_out_of_turn():
        result = algorithm.sealed_test()
    state = algorithm.read_state()
    when = f"{result.created:%Y-%m-%d %H:%M:%S} UTC"
    yield dg.Output(
        result.model_dump(mode="json"),
        metadata={
            "snapshot_id": result.snapshot_id,
            **describe.figures(test_score=result.test_score),
            "tasks": result.test_tasks,
            "evaluated": f"once, at {when}"
            + ("; read back by this materialization" if read_back else ""),
        },
    )
    yield from describe.sealed_checks(algorithm, state, None, key("sealed_test_score"), name)
    context.log_event(_summary(algorithm))


ASSETS = [step, integration, promotion, sealed_test_score, SUMMARY]
ROUND_ASSETS = [step]
FINAL_ASSETS = [integration, promotion, sealed_test_score]
