"""The Evolver as assets, keyed `evolver/<name>`.

Each (round, slot) partition of the grid (`Shape.slots()`) is one step of the search, and
makes only the assets of that step:

    r000.vanilla    the cold start          snapshot (vanilla), confirm (train x K), failure_map
    r003.diagnose   the round's diagnosis   failure_map, plan
    r003.w1c2       a candidate (`x1`: a    snapshot, screen, confirm, gates
                    recombination)
    r003.decide     the round's decision    decisions

A candidate has a `screen` once screened and a `confirm` once confirmed (a cull stops it at
the screen; a refused, empty or failed edit before either): a missing partition is a step
that did not get that far. Per experiment, once the search has terminated (the finalize
job): `archive` (the QD archive's elites), `ledger` (the decision ledger, findings.md), then
`sealed_test_score` (the retention report: the test split unsealed once); `summary` is
reported by every step.

The algorithm lives in `flashrsi_dagster.algorithms.evolver`; these functions open the
experiment named by the partition, call one step, and describe what its records say. A step
already done is read back, never redone; one asked for out of turn fails and changes nothing.
"""

from collections.abc import Callable, Iterator
from typing import Any

import dagster as dg

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.evolver import endings, views
from flashrsi_dagster.algorithms.evolver.failure_map import FailureMap
from flashrsi_dagster.algorithms.evolver.ledger_entries import round_entries
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import VANILLA, stopped
from flashrsi_dagster.algorithms.evolver.records import RetentionReport, node_id
from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.report import decisions_table
from flashrsi_dagster.orchestration import describe
from flashrsi_dagster.orchestration.context import (
    candidate_algorithm,
    experiment_algorithm,
    refusing_out_of_turn,
)
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.records import Trajectory, read_optional
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.behaviour import BehaviourSignal, behaviour

PREFIX = "evolver"
PARTITIONS = AlgorithmPartitions.of(PREFIX)
GROUP, SEALED_GROUP = "evolver", "evolver_sealed_test"
RESOURCES = {"experiments_home"}
ONCE = "evaluated_once_after_termination"
md = dg.MetadataValue.md


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey([PREFIX, name])


SUMMARY = dg.AssetSpec(
    key("summary"),
    group_name=GROUP,
    partitions_def=PARTITIONS.experiments,
    deps=[dg.AssetDep(key("decisions"), partition_mapping=PARTITIONS.experiment_dependency())],
    description="The experiment at a glance: the cold start's baseline, every round (its "
    "WHYs, candidates, outcome, parent after it), termination, the retention report and the "
    "decision ledger. Reported by every step.",
)


def _out(name: str, description: str, **kinds: Any) -> dg.AssetOut:
    return dg.AssetOut(key=key(name), is_required=False, description=description, **kinds)


OUTS = {
    "failure_map": _out(
        "failure_map",
        "The persistent failure map: failing train tasks per WHY, each task's diagnosis, the "
        "children re-diagnosed against their parent (fixed, flipped, still failing) and the "
        "flips with their harm replay. At `vanilla`, the cold start's, with vanilla's "
        "stability ledger; at `diagnose`, the round's.",
    ),
    "plan": _out(
        "plan",
        "The round's plan (slot `diagnose`): the WHYs chosen (by the model, or the formula as "
        "the fallback), the formula's ranking (always logged), the anchor sets and the "
        "recombinations.",
    ),
    "snapshot": _out(
        "snapshot",
        "The candidate's git snapshot: its changed files, the WHERE bound from them, its diff "
        "against the parent (linked) and the Worker's design run. At `vanilla`, the seed.",
        kinds={"git"},
    ),
    "screen": _out(
        "screen",
        "The screen: the candidate at K=1 on its anchor tasks against vanilla's rates; the "
        "bucket (clear_win, within_band, cull), delta and sigma_screen.",
        kinds={"parquet"},
    ),
    "confirm": _out(
        "confirm",
        "The confirm: the candidate on the whole train split x K, against vanilla's mean. At "
        "`vanilla`, the cold start's K runs: the fixed baseline.",
        kinds={"parquet"},
    ),
    "gates": _out(
        "gates",
        "Gate-f, Gate-b and Gate2 in order, the node's final state and the paired statistics "
        "against vanilla (credited 2-sigma and the small-n verdict: labels, not conditions).",
    ),
    "decisions": _out(
        "decisions",
        "The round's decision (slot `decide`): its outcome, the parent before and after, the "
        "promotion if any, and the ledger entries of its candidates.",
    ),
}


@dg.multi_asset(
    name="evolver_step",  # ModularRSI's op is `step`: op names are unique per code location
    outs=OUTS,
    internal_asset_deps={
        "failure_map": set(),
        "plan": {key("failure_map")},
        "snapshot": {key("plan")},
        "screen": {key("snapshot")},
        "confirm": {key("screen")},
        "gates": {key("confirm")},
        "decisions": {key("gates")},
    },
    partitions_def=PARTITIONS.grid,
    group_name=GROUP,
    can_subset=True,
    required_resource_keys=RESOURCES,
    check_specs=[
        describe.content_check_spec(key("snapshot")),
        describe.behaviour_check_spec(key("confirm")),
        describe.adopted_check_spec(key("gates"), PARTITIONS.grid),
    ],
)
def step(context: dg.AssetExecutionContext) -> Iterator:
    """One step of the search (the slot says which): run it, or read it back, then describe
    the assets its slot has (those selected)."""
    algorithm, name, todo = _step_of(context)
    with refusing_out_of_turn():
        algorithm.do(todo)
    selected = context.selected_asset_keys
    for output in DESCRIBE[todo.action](algorithm, name, todo):
        if output is not None and key(output.output_name) in selected:
            yield output
    if CONTENT in context.selected_asset_check_keys:
        yield _content_check(algorithm, todo, str(context.partition_key))
    check = dg.AssetCheckKey(key("confirm"), describe.BEHAVIOUR_CHECK)
    if todo.action in BEHAVIOUR_JUDGED and check in context.selected_asset_check_keys:
        where = str(context.partition_key)
        yield describe.behaviour_check(_behaviour(algorithm, todo), key("confirm"), where)
    if todo.action == "candidate" and ADOPTED in context.selected_asset_check_keys:
        yield _adopted_check(algorithm, todo, str(context.partition_key))
    context.log_event(_summary(algorithm))


CONTENT = dg.AssetCheckKey(key("snapshot"), describe.CONTENT_CHECK)


def _content_check(e: Evolver, step: Step, where: str) -> dg.AssetCheckResult:
    """A candidate's contamination verdict; other steps make no candidate to check."""
    if step.action != "candidate" or step.round is None or step.slot is None:
        unchecked = "vanilla, the baseline" if step.action == "cold_start" else "no candidate"
        return describe.content_check(None, key("snapshot"), where, unchecked)
    path = e.layout.candidate(step.round, step.slot, "content.json")
    node = read_optional(e.layout.node(node_id(step.round, step.slot)), Node)
    unchecked = f"{node.state}: {node.reason}" if node else "no node"
    verdict = read_optional(path, ContentVerdict)
    return describe.content_check(verdict, key("snapshot"), where, unchecked)


ADOPTED = dg.AssetCheckKey(key("gates"), describe.ADOPTED_CHECK)
KEPT = ("in_library", "promoted_to_baseline")
"""A candidate's states that keep its edit: it passed every gate."""


def _adopted_check(e: Evolver, step: Step, where: str) -> dg.AssetCheckResult:
    """A candidate's outcome on its partition: kept, or a warning saying where it stopped."""
    assert step.round is not None and step.slot is not None
    node = read_optional(e.layout.node(node_id(step.round, step.slot)), Node)
    state, reason = (node.state, node.reason) if node else ("no node", None)
    return describe.adopted_check(state, reason, state in KEPT, key("gates"), where)


BEHAVIOUR_JUDGED = ("cold_start", "candidate")
"""The steps that make a `confirm`: vanilla's (no parent) and a candidate's."""


def _behaviour(e: Evolver, todo: Step) -> BehaviourSignal | str:
    """A candidate's confirm (train x K) against its parent's: vanilla's cold start, or the
    promoted node's confirm, on the same tasks."""
    if todo.action == "cold_start":
        return "no parent: vanilla is the fixed baseline"
    assert todo.round is not None and todo.slot is not None
    node = read_optional(e.layout.node(node_id(todo.round, todo.slot)), Node)
    if node is None or node.confirm_mean is None:
        return f"no confirm: {node.state if node else 'no node'}"
    r, slot = _partition_of(e, node.parent_id)
    if (r, slot) == (0, VANILLA):
        parents = e.vanilla_runs()
    else:
        made = None if r is None else read_optional(e.layout.node(node_id(r, slot)), Node)
        parents = e.confirm_runs(made) if made is not None else []
    return behaviour(e.confirm_runs(node), parents, e.experiment.config.behaviour)


def _step_of(context: dg.AssetExecutionContext) -> tuple[Evolver, str, Step]:
    algorithm, name, k, slot = candidate_algorithm(context)
    assert isinstance(algorithm, Evolver)
    todo = algorithm.shape.step_at(k, slot)
    if todo is None:
        raise dg.Failure(
            description=f"partition {context.partition_key} is no step of the Evolver: round 0 "
            f"is the cold start alone (slot {VANILLA}), and {VANILLA} is round 0's only; "
            "nothing was done",
            allow_retries=False,
        )
    return algorithm, name, todo


# -- the cold start ---------------------------------------------------------------------------


def _cold_start(e: Evolver, name: str, step: Step) -> Iterator[dg.Output | None]:
    cold = e.cold_start_record()
    info = {"round": 0, "slot": VANILLA, "snapshot_id": cold.vanilla_id, "parent_id": None}
    info |= {"status": "vanilla", "reason": "the seed harness: the fixed baseline"}
    store = e.experiment.snapshots
    metadata = describe.snapshot(store, info, PARTITIONS, name, key("snapshot"))
    yield dg.Output(info, output_name="snapshot", metadata=metadata | {"parent": "none"})
    yield _rollouts(
        "confirm",
        e.vanilla_runs(),
        {"k": cold.k, "eval_set": cold.eval_set, **describe.figures(vanilla_mean=cold.mean)},
    )
    metadata = {
        "taxonomy": cold.taxonomy,
        "failing": cold.failing,
        "stability_ledger": md(views.stability_markdown(cold.rates)),
        **_calls(e, 0, "diagnose-1"),
    }
    yield _failure_map(e.failure_map(1), metadata)


def _rollouts(output: str, rollouts: list[Trajectory], metadata: dict[str, Any]) -> dg.Output:
    frame = scores_frame(rollouts)
    preview = describe.rollout_preview(frame, rollouts, "_no rollouts_")
    metadata = metadata | {"rollouts": len(frame)} | preview
    return dg.Output(frame, output_name=output, metadata=metadata)


def _failure_map(failure_map: FailureMap, metadata: dict[str, Any]) -> dg.Output:
    return dg.Output(
        failure_map.model_dump(mode="json"),
        output_name="failure_map",
        metadata={
            **metadata,
            "failing_tasks": len(failure_map.failing),
            "flips": len(failure_map.flips),
            "why_counts": md(views.why_counts_markdown(failure_map)),
            "diagnoses": md(views.failing_markdown(failure_map)),
            "children": md(views.children_markdown(failure_map)),
        },
    )


def _calls(e: Evolver, r: int, name: str) -> dict[str, Any]:
    """A model call of the round (`diagnose-1`, `pick`): what the Worker did."""
    prefix = name.split("-")[0]
    return {f"{prefix}_{k}": v for k, v in describe.worker(e.layout.model_call(r, name)).items()}


# -- a round's diagnosis ----------------------------------------------------------------------


def _diagnose(e: Evolver, name: str, step: Step) -> Iterator[dg.Output | None]:
    r = step.round
    assert r is not None
    current = e.read_state().round(r)
    assert current is not None and current.plan is not None
    plan = current.plan
    written = e.layout.failure_map(r).exists()
    in_force = "this round's" if written else f"the last one written ({plan.error})"
    metadata = {"map": in_force, **_calls(e, r, "diagnose-1")}
    yield _failure_map(e.failure_map(r + 1), metadata)
    yield dg.Output(
        plan.model_dump(mode="json"),
        output_name="plan",
        metadata={
            "parent_id": plan.parent_id,
            "whys": ", ".join(plan.whys) or "-",
            "chosen_by": plan.source,
            "slots": ", ".join(plan.slots) or "-",
            "error": plan.error or "-",
            "plan": md(views.plan_markdown(plan)),
            **_calls(e, r, "pick"),
        },
    )


# -- a candidate ------------------------------------------------------------------------------


def _candidate(e: Evolver, name: str, step: Step) -> Iterator[dg.Output | None]:
    assert step.round is not None and step.slot is not None
    node = read_optional(e.layout.node(node_id(step.round, step.slot)), Node)
    assert node is not None, f"{step.describe()} left no node"
    yield _snapshot(e, name, node)
    yield _screen(e, node)
    if node.confirm_mean is not None:
        change = node.confirm_mean - (node.vanilla_mean or 0.0)
        figures = describe.figures(
            confirm_mean=node.confirm_mean, vanilla_mean=node.vanilla_mean, change=change
        )
        path = e.layout.candidate(node.round, node.slot, "confirm.jsonl")
        yield _rollouts("confirm", e.recorded(path), {"eval_set": node.eval_set, **figures})
    yield _gates(node)


def _snapshot(e: Evolver, name: str, node: Node) -> dg.Output:
    info = node.model_dump(
        mode="json", include={"round", "slot", "why", "where", "snapshot_id", "parent_id"}
    )
    info |= {"status": node.state, "reason": node.reason, "changed": node.changed}
    parent_round, parent_slot = _partition_of(e, node.parent_id)
    linked = {**info, "parent_round": parent_round}
    store = e.experiment.snapshots
    metadata = describe.snapshot(store, linked, PARTITIONS, name, key("snapshot"), parent_slot)
    metadata |= {
        "why": node.why,
        "where": node.where or "- (nothing committed)",
        "declared_where": node.declared_where or "-",
        "changed": md(views.changed_markdown(node.changed)),
        **describe.worker(e.layout.candidate(node.round, node.slot, "design.json")),
    }
    return dg.Output(info, output_name="snapshot", metadata=metadata)


def _partition_of(e: Evolver, snapshot_id: str) -> tuple[int | None, str]:
    """The (round, slot) that made a parent: vanilla's cold start, or a promoted node."""
    if snapshot_id == e.cold_start_record().vanilla_id:
        return 0, VANILLA
    made = [n for n in e.nodes(e.read_state()) if n.snapshot_id == snapshot_id]
    return (made[0].round, made[0].slot) if made else (None, VANILLA)


def _screen(e: Evolver, node: Node) -> dg.Output | None:
    if node.screen is None:
        return None
    rollouts = e.recorded(e.layout.candidate(node.round, node.slot, "screen.jsonl"))
    scores = {t.task_id: float(t.score or 0.0) for t in rollouts}
    s = node.screen
    metadata = {
        "bucket": s["bucket"],
        **describe.figures(delta=s["delta"], sigma_screen=s["sigma"], threshold=s["threshold"]),
        "anchor_tasks": ", ".join(s["tasks"]),
        "scores": md(views.screen_markdown(scores, e.vanilla().rates())),
    }
    return _rollouts("screen", rollouts, metadata)


def _gates(node: Node) -> dg.Output:
    paired = node.paired or {}
    return dg.Output(
        node.model_dump(
            mode="json",
            include={"state", "reason", "library", "gates", "credited_2sigma", "paired", "fired"},
        ),
        output_name="gates",
        metadata={
            "state": node.state,
            "reason": node.reason,
            "in_library": node.library,
            "gates": md(views.gates_markdown(node.gates)),
            "credited_2sigma": views.YES_NO[node.credited_2sigma],
            "small_n": paired.get("small_n", "-"),
            "paired": md(views.paired_markdown(node.paired)),
            "beacon_fired_on": "-" if node.fired is None else len(node.fired),
        },
    )


# -- a round's decision -----------------------------------------------------------------------


def _decide(e: Evolver, name: str, step: Step) -> Iterator[dg.Output | None]:
    r = step.round
    assert r is not None
    state = e.read_state()
    current = state.round(r)
    assert current is not None and current.plan is not None and current.decision is not None
    decision = current.decision
    held = {d.id: d for d in Ledger.of(e.experiment).entries()}
    entries = [held[i] for i in round_entries(current) if i in held]
    stop = e.shape.termination.stop(state.outcomes()[:r])
    nodes = [current.nodes[s] for s in current.plan.slots if s in current.nodes]
    yield dg.Output(
        {
            "decision": decision.model_dump(mode="json"),
            "ledger": [d.model_dump(mode="json") for d in entries],
        },
        output_name="decisions",
        metadata={
            "outcome": decision.outcome,
            "reason": decision.reason,
            "parent_before": decision.parent_before,
            "parent_after": decision.parent_after,
            "promoted": decision.promoted or "-",
            "stops_after_this_round": stop or "no",
            "nodes": md(views.nodes_markdown(nodes)),
            "ledger": md(decisions_table(entries)),
        },
    )


DESCRIBE: dict[str, Callable[[Evolver, str, Step], Iterator[dg.Output | None]]] = {
    "cold_start": _cold_start,
    "diagnose": _diagnose,
    "candidate": _candidate,
    "decide": _decide,
}


def _summary(e: Evolver) -> dg.AssetMaterialization:
    state = e.read_state()
    nodes = e.nodes(state)
    metadata: dict[str, Any] = {
        "rounds": md(views.rounds_markdown(state)),
        "candidates": len(nodes),
        "in_library": sum(n.library for n in nodes),
        "next_step": e.next_step(state).describe(),
        "terminated": stopped(state, e.shape) or "no",
    }
    if state.cold_start is not None:
        metadata |= describe.figures(vanilla_mean=state.cold_start.mean)
    report = read_optional(e.layout.retention, RetentionReport)
    if report is not None:
        metadata["retention"] = md(views.retention_markdown(report.rows))
    return describe.summary_event(e.experiment, SUMMARY.key, metadata)


# -- per experiment, after termination --------------------------------------------------------


def _finished(context: dg.AssetExecutionContext) -> tuple[Evolver, str]:
    """The experiment's Evolver, once its search has terminated (else the asset fails)."""
    algorithm, name = experiment_algorithm(context)
    assert isinstance(algorithm, Evolver)
    due = algorithm.next()
    if due.action not in ("sealed_test", "done"):
        raise dg.Failure(
            description=f"the search is not finished: {due.describe()} comes first; nothing "
            "was done",
            allow_retries=False,
        )
    return algorithm, name


@dg.asset(
    key=key("archive"),
    partitions_def=PARTITIONS.experiments,
    group_name=GROUP,
    deps=[dg.AssetDep(key("gates"), partition_mapping=PARTITIONS.experiment_dependency())],
    required_resource_keys=RESOURCES,
)
def archive(context: dg.AssetExecutionContext) -> dg.Output:
    """The QD archive the search ends with: per WHERE x WHY cell, the candidate that passed
    every gate with the best K-run mean (the elites recombinations merge)."""
    e, _ = _finished(context)
    nodes = e.nodes(e.read_state())
    cells = endings.archive_of(nodes)
    metadata = {
        "cells": len(cells),
        "archive": md(views.archive_markdown(cells)),
        "library": md(views.nodes_markdown([n for n in nodes if n.library])),
    }
    return dg.Output(cells, metadata=metadata)


@dg.asset(
    key=key("ledger"),
    partitions_def=PARTITIONS.experiments,
    group_name=GROUP,
    deps=[dg.AssetDep(key("decisions"), partition_mapping=PARTITIONS.experiment_dependency())],
    required_resource_keys=RESOURCES,
)
def ledger(context: dg.AssetExecutionContext) -> dg.Output:
    """The decision ledger the search leaves (every candidate adopted into the library or
    rejected, every promotion, with its evidence) and findings.md, its human log."""
    e, _ = _finished(context)
    entries = Ledger.of(e.experiment).entries()
    findings = e.layout.findings.read_text() if e.layout.findings.exists() else "_none_"
    metadata = {
        "adopted": sum(d.decision == "adopt" for d in entries),
        "rejected": sum(d.decision == "reject" for d in entries),
        **describe.ledger(e.experiment),
        "findings": md(findings),
    }
    return dg.Output([d.model_dump(mode="json") for d in entries], metadata=metadata)


@dg.asset(
    key=key("sealed_test_score"),
    partitions_def=PARTITIONS.experiments,
    group_name=SEALED_GROUP,
    kinds={"sealed"},
    deps=[archive, ledger],
    required_resource_keys=RESOURCES,
    check_specs=describe.sealed_check_specs(key("sealed_test_score"), gap=False, once=ONCE),
)
def sealed_test_score(context: dg.AssetExecutionContext) -> Iterator:
    """The retention report: the test split unsealed once, after termination; vanilla and
    each version a round delivered scored on it, and how much of each train lift held.
    Later materializations read it back."""
    e, name = _finished(context)
    read_back = e.layout.retention.exists()
    with refusing_out_of_turn():
        report = e.sealed_test()
    yield dg.Output(report.model_dump(mode="json"), metadata=_retention(report, read_back))
    yield _once_check(e, report, name)
    yield describe.splits_check(e, key("sealed_test_score"), name)
    context.log_event(_summary(e))


def _retention(report: RetentionReport, read_back: bool) -> dict[str, Any]:
    last = report.rows[-1]
    when = f"{report.created:%Y-%m-%d %H:%M:%S} UTC"
    return {
        "delivered": last["label"],
        "snapshot_id": last["snapshot_id"],
        **describe.figures(test_score=last["test"], train_score=last["train"]),
        "retained": "-" if last["retained"] is None else f"{last['retained']:.2f}",
        "versions": len(report.rows),
        "eval_set": report.eval_set,
        "k": report.k,
        "retention": md(views.retention_markdown(report.rows)),
        "evaluated": f"once, at {when}"
        + ("; read back by this materialization" if read_back else ""),
    }


def _once_check(e: Evolver, report: RetentionReport, where: str) -> dg.AssetCheckResult:
    """One report, after termination, of vanilla and every delivered version, each scored
    on every test task K times."""
    from flashrsi_dagster.benchmarks.loading import load_splits

    state = e.read_state()
    tasks = load_splits(e.experiment.config.benchmark, e.benchmark).test_size
    runs = {r["label"]: len(e.recorded(e.layout.test_rollouts(r["label"]))) for r in report.rows}
    delivered = [label for label, _, _ in endings.delivered(e, state)]
    decided = [rd.decision.created for rd in state.rounds if rd.decision is not None]
    passed = (
        stopped(state, e.shape) is not None
        and all(report.created >= t for t in decided)
        and list(runs) == delivered
        and all(n == tasks * report.k for n in runs.values())
    )
    found = {
        "rollouts": ", ".join(f"{label}: {n}" for label, n in runs.items()),
        "expected_per_version": tasks * report.k,
    }
    return describe.check_result(
        where, found, check_name=ONCE, asset_key=key("sealed_test_score"), passed=passed
    )


ASSETS = [step, archive, ledger, sealed_test_score, SUMMARY]
ROUND_ASSETS = [step]
FINAL_ASSETS = [archive, ledger, sealed_test_score]
