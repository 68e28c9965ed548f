"""Asset metadata and check results: what the UI shows of a step, read from the records.

The renderings themselves (diffs, transcripts, charts, rounding) are engine code in
`flashrsi_dagster.views`; this module picks what each asset shows and wraps it for Dagster.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

import dagster as dg
import pandas as pd

from flashrsi_dagster.algorithms.base import ONLY_SLOT
from flashrsi_dagster.checks import CheckOutcome, host
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.controls.lift import control_lines
from flashrsi_dagster.decisions import Ledger
from flashrsi_dagster.decisions.ledger import Decision
from flashrsi_dagster.decisions.report import ledger_figures
from flashrsi_dagster.evaluator.compare import basis
from flashrsi_dagster.experiment import Experiment
from flashrsi_dagster.experiment.keys import NIGHTLY
from flashrsi_dagster.explorer.candidates import outcome as candidate_outcome
from flashrsi_dagster.explorer.links import experiment_url, node_url
from flashrsi_dagster.orchestration.dagster_internals import TargetMaterialization
from flashrsi_dagster.orchestration.partitions import AlgorithmPartitions
from flashrsi_dagster.records import Trajectory, read_optional
from flashrsi_dagster.rollouts.engine import final_trajectories
from flashrsi_dagster.rollouts.record import RolloutRecord
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.stats.behaviour import BehaviourSignal
from flashrsi_dagster.views import (
    RoundRow,
    cost_text,
    diff_markdown,
    experiment_chart,
    pick_examples,
    trajectory_markdown,
    worker_activity_markdown,
)

TRANSCRIPT_CHARS = 12_000


figures = host.figures
"""Numbers for metadata, rounded as every view rounds them (None shows as "-")."""


def snapshot_link(
    partitions: AlgorithmPartitions, asset: dg.AssetKey, name: str, k: int, slot: str
):
    """A link to another candidate's snapshot (its parent, say) in the same UI: the asset's
    Partitions tab with that partition selected (the Overview tab ignores `partition`)."""
    partition = quote(str(partitions.key(name, k, slot)))
    return dg.MetadataValue.url(
        f"/assets/{'/'.join(asset.path)}?view=partitions&partition={partition}"
    )


def snapshot(
    store: SnapshotStore,
    info: dict,
    partitions: AlgorithmPartitions,
    name: str,
    asset: dg.AssetKey,
    slot: str = ONLY_SLOT,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "snapshot_id": info.get("snapshot_id") or "-",
        "parent_id": info.get("parent_id") or "-",
        "status": info["status"],
        "reason": info.get("reason") or "-",
    }
    if info.get("produced_by"):  # made by an adopted harness, not the Worker role's own
        metadata["produced_by"] = info["produced_by"]
    parent_round = info.get("parent_round", 0 if info.get("parent_id") else None)
    if parent_round is not None:
        metadata["parent"] = snapshot_link(partitions, asset, name, parent_round, slot)
    child, parent = info.get("snapshot_id"), info.get("parent_id")
    metadata.update(explorer_link(name, child, info.get("round"), info.get("slot")))
    if child and parent:
        stats = store.diff_stats(parent, child)
        metadata.update(
            files_changed=stats.files,
            insertions=stats.insertions,
            deletions=stats.deletions,
            diff=dg.MetadataValue.md(diff_markdown(store, parent, child)),
        )
    return metadata


def explorer_node(snapshot_id: str | None, round_: int | None, slot: str | None) -> str | None:
    """The candidate's node id in the explorer's tree: its snapshot, else its round and slot
    (an edit that committed nothing), as `explorer.candidates.node_id` names it."""
    if snapshot_id:
        return str(snapshot_id)
    if round_ is not None and slot:
        return f"r{round_}.{slot}"
    return None


def explorer_link(
    name: str, snapshot_id: str | None, round_: int | None, slot: str | None
) -> dict[str, Any]:
    """`explorer`: the candidate's node in the experiment explorer (`explorer.links`)."""
    node = explorer_node(snapshot_id, round_, slot)
    return {} if node is None else {"explorer": dg.MetadataValue.url(node_url(name, node))}


def worker(path: Path) -> dict[str, Any]:
    """What the Worker of a step did: its activity, then its whole transcript (cut)."""
    trajectory = read_optional(path, Trajectory)
    if trajectory is None:
        return {}
    return {
        "worker_status": str(trajectory.status),
        "worker_activity": dg.MetadataValue.md(worker_activity_markdown(trajectory)),
        "worker_trajectory": dg.MetadataValue.md(
            trajectory_markdown(trajectory, max_chars=TRANSCRIPT_CHARS)
        ),
    }


SEVERITY = {"error": dg.AssetCheckSeverity.ERROR, "warn": dg.AssetCheckSeverity.WARN}


def check(outcome: CheckOutcome, where: str, asset: dg.AssetKey | None = None):
    """A check's outcome (`checks.host`) as Dagster's result, naming the partition it judged
    (the UI's Checks tab shows an asset's latest result without it). Its `result` comes first
    and its description says the same: Dagster labels a failed check "Failed" whatever its
    severity, so a warning is named a warning in words."""
    markdown = {k: dg.MetadataValue.md(v) for k, v in outcome.markdown.items()}
    return dg.AssetCheckResult(
        check_name=outcome.name,
        asset_key=asset,
        passed=outcome.passed,
        severity=SEVERITY[outcome.severity],
        description=outcome.result,
        metadata={"partition": where, "result": outcome.result, **outcome.metadata, **markdown},
    )


def check_result(
    where: str,
    metadata: dict[str, Any],
    *,
    check_name: str,
    passed: bool,
    asset_key: dg.AssetKey | None = None,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
    summary: str = "",
) -> dg.AssetCheckResult:
    """A check an algorithm's own definitions evaluate (its figures in `metadata`, why in
    `summary`), reported as `check` reports the host's."""
    level = "warn" if severity == dg.AssetCheckSeverity.WARN else "error"
    outcome = CheckOutcome(
        name=check_name, passed=passed, severity=level, summary=summary, metadata=metadata
    )
    return check(outcome, where, asset_key)


def check_spec(name: str, asset: dg.AssetKey, **fields: Any) -> dg.AssetCheckSpec:
    """The spec of a host check (`checks.host`), described as the explorer describes it."""
    return dg.AssetCheckSpec(name, asset=asset, description=host.DESCRIPTIONS[name], **fields)


def edit_check(store: SnapshotStore, info: dict, where: str) -> dg.AssetCheckResult:
    """Every path a committed edit changed is declared by its parent's components."""
    return check(host.edit_within_declared_paths(store, info), where)


CONTENT_CHECK = host.CONTENT


def content_check_spec(asset: dg.AssetKey) -> dg.AssetCheckSpec:
    return check_spec(CONTENT_CHECK, asset)


def content_check(
    verdict: ContentVerdict | None, asset: dg.AssetKey, where: str, unchecked: str
) -> dg.AssetCheckResult:
    """The candidate's contamination verdict as a check (`unchecked`: why it has none, e.g.
    the seed, or an edit refused before it)."""
    return check(host.content(verdict, unchecked), where, asset)


def trajectories(record, frame: pd.DataFrame, rollouts: list[Trajectory]) -> dict[str, Any]:
    """The round's rollouts: a preview table, and one passing and one failing transcript."""
    metadata: dict[str, Any] = {
        "snapshot_id": record.snapshot_id or "-",
        "status": record.status,
        **figures(dev_score=record.dev_score),
        "rollouts": len(frame),
    }
    return metadata | rollout_preview(frame, rollouts, "_no rollouts: the edit was rejected_")


def rollout_preview(frame: pd.DataFrame, rollouts: list[Trajectory], empty: str) -> dict:
    """A preview table of the rollouts and one passing and one failing transcript (`empty`
    says why there are none)."""
    if not len(frame):
        return {"preview": dg.MetadataValue.md(empty)}
    metadata: dict[str, Any] = {
        "preview": dg.MetadataValue.md(frame.head(20).round(3).to_markdown(index=False))
    }
    passing, failing = pick_examples(rollouts)
    for label, example in (("passing_example", passing), ("failing_example", failing)):
        text = (
            "_none in this round_"
            if example is None
            else trajectory_markdown(example, max_chars=TRANSCRIPT_CHARS)
        )
        metadata[label] = dg.MetadataValue.md(text)
    return metadata


def lineage(state, k: int, slot: str = ONLY_SLOT) -> dict[str, str]:
    """A candidate's snapshot and parent ids ("-" for a rejected step's snapshot)."""
    this = state.round(k, slot)
    return {
        "snapshot_id": (this and this.snapshot_id) or "-",
        "parent_id": (this and this.parent_id) or "-",
    }


def scores(state, k: int, table: dict, slot: str = ONLY_SLOT) -> dict[str, Any]:
    score = table.get("score")
    parent, this = state.parent_round(k, slot), state.round(k, slot)
    # a score on another evaluation set is never a change over the parent's (evaluator.compare)
    on = None if parent is None else basis(this.eval_set if this else None, parent.eval_set)
    change = None
    if score is not None and on is not None and on.comparable:
        change = score - (parent.dev_score or 0.0)
    cost = table.get("cost")
    metadata = {
        **lineage(state, k, slot),
        **figures(dev_score=score, change_vs_parent=change),
        "cost": "unpriced (no llm.price)" if cost is None else cost_text(cost),
        "input_tokens": table.get("input_tokens", 0),
        "output_tokens": table.get("output_tokens", 0),
    }
    if on is not None:
        metadata["basis"] = on.label
    return metadata


def score_check(table: dict, denominator: int, asset: dg.AssetKey, where: str):
    return check(host.score_in_unit_interval(table, denominator), where, asset)


BEHAVIOUR_CHECK = host.BEHAVIOUR
ADOPTED_CHECK = host.ADOPTED


def adopted_check_spec(
    asset: dg.AssetKey, partitions_def: dg.PartitionsDefinition
) -> dg.AssetCheckSpec:
    """Partitioned as its asset is: the check's page then has a grid of its own, each
    partition passed (adopted) or failed (rejected: a warning, though Dagster's grid labels
    it "Failed"), where the asset's grid shows every step that ran alike. A result counts
    for its partition only when reported in the run that materialized it, as the step's is.
    Dagster 1.13 calls a partitioned check a preview; its warning about that is left out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return check_spec(ADOPTED_CHECK, asset, partitions_def=partitions_def)


def adopted_check(
    outcome: str, reason: str | None, adopted: bool, asset: dg.AssetKey, where: str
) -> dg.AssetCheckResult:
    """`adopted_check_spec`'s result for a step whose outcome is `outcome`."""
    return check(host.adopted(outcome, reason, adopted), where, asset)


def decided_checks(
    instance: dg.DagsterInstance,
    entries: list[Decision],
    partitions: AlgorithmPartitions,
    name: str,
    asset: dg.AssetKey,
) -> list[dg.AssetCheckEvaluation]:
    """`edit_adopted` for each candidate the ledger judged, from a run of another partition
    (the promotion): Dagster 1.13 counts a result for a partition only when it targets that
    partition's latest materialization of `asset`, so each names it. The latest entry on a
    candidate decides; candidates without a materialization yet are left out."""
    latest = {(e.candidate.round, e.candidate.slot): e for e in entries}
    found = []
    for (k, slot), entry in latest.items():
        if k is None or slot is None:
            continue
        partition = str(partitions.key(name, k, slot))
        made = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset, asset_partitions=[partition]), limit=1
        ).records
        if not made:
            continue
        outcome = host.decided(candidate_outcome(entry), entry.reason)
        result = check(outcome, partition, asset)
        found.append(
            dg.AssetCheckEvaluation(
                asset_key=asset,
                check_name=outcome.name,
                passed=outcome.passed,
                severity=result.severity,
                description=result.description,
                metadata=result.metadata,
                partition=partition,
                target_materialization_data=TargetMaterialization(
                    storage_id=made[0].storage_id,
                    run_id=made[0].run_id,
                    timestamp=made[0].timestamp,
                ),
            )
        )
    return found


def behaviour_check_spec(asset: dg.AssetKey) -> dg.AssetCheckSpec:
    return check_spec(BEHAVIOUR_CHECK, asset)


def behaviour_check(
    signal: BehaviourSignal | str, asset: dg.AssetKey, where: str
) -> dg.AssetCheckResult:
    """The behaviour check's result (`checks.host.behaviour`): a warning when flagged."""
    return check(host.behaviour(signal), where, asset)


def chart_rows(name: str, state) -> list[RoundRow]:
    promoted = state.promotion.snapshot_id if state.promotion else None
    return [
        RoundRow(
            experiment=name,
            round=r.round,
            slot=r.slot,
            status=r.status,
            dev_score=r.dev_score,
            reason=r.reason,
            promoted=r.snapshot_id is not None and r.snapshot_id == promoted,
        )
        for r in state.rounds
    ]


def summary(experiment: Experiment, state) -> dict[str, Any]:
    name = experiment.config.experiment.name
    seed = state.round(0)
    metadata: dict[str, Any] = {
        "chart": dg.MetadataValue.md(experiment_chart(chart_rows(name, state))),
        "rounds": len({r.round for r in state.rounds}),
        "rejected": sum(r.status == "rejected" for r in state.rounds),
        **figures(best_dev_score=_best_dev(state)),
    }
    if seed is not None and seed.eval_set:
        metadata["eval_set"] = seed.eval_set
    if any(r.slot != ONLY_SLOT for r in state.rounds):
        metadata["candidates"] = len(state.rounds)
    if state.promotion:
        metadata["promoted_round"] = state.promotion.round
        if state.promotion.slot != ONLY_SLOT:
            metadata["promoted_slot"] = state.promotion.slot
    if state.test:
        metadata.update(figures(test_score=state.test.test_score))
    return _every_summary(experiment, metadata)


def summary_event(
    experiment: Experiment, asset: dg.AssetKey, metadata: dict[str, Any]
) -> dg.AssetMaterialization:
    """An algorithm's summary, reported by a step: `metadata`, then what every summary shows
    (the validity note, the decision ledger), for the experiment's partition of `asset`."""
    metadata = _every_summary(experiment, metadata)
    name = experiment.config.experiment.name
    return dg.AssetMaterialization(asset_key=asset, partition=name, metadata=metadata)


def _every_summary(experiment: Experiment, metadata: dict[str, Any]) -> dict[str, Any]:
    """What every summary adds: the validity note, the decision ledger, the lift over the
    control, and the link to the experiment's tree in the explorer."""
    note = experiment.meta.validity_note()
    if note:
        metadata["validity"] = note
    metadata.update(ledger(experiment))
    metadata.update(control(experiment))
    name = experiment.config.experiment.name
    metadata["explorer"] = dg.MetadataValue.url(experiment_url(name))
    fork = experiment.config.experiment.fork
    if fork is not None and fork.snapshot is not None:
        metadata["forked_from"] = dg.MetadataValue.md(forked_from_markdown(fork))
    return metadata


def forked_from_markdown(fork) -> str:
    """The lineage across experiments: the origin and the candidate this one started from."""
    link = f"[{fork.experiment}]({experiment_url(fork.experiment)})"
    return (
        f"{link} {fork.candidate}, snapshot `{fork.snapshot[:12]}` (evaluation sets: "
        f"{fork.eval_sets})"
    )


def control(experiment: Experiment) -> dict[str, Any]:
    """The lift over the control the config names (`experiment.control`), if it names one."""
    lines = control_lines(experiment)
    return {"lift_over_control": dg.MetadataValue.md("\n".join(lines))} if lines else {}


def ledger(experiment: Experiment) -> dict[str, Any]:
    """The decision ledger for a summary: the trade-off rule, the decisions, the baseline and
    the comparison behind it (see `decisions/report.py`)."""
    figures = ledger_figures(Ledger.of(experiment), experiment.config.comparison.describe())
    return {
        k.removesuffix("_md"): dg.MetadataValue.md(v) if k.endswith("_md") else v
        for k, v in figures.items()
    }


def previous_night(name: str, names: list[str]) -> str | None:
    """The nightly experiment of the same config on the night before `name`'s, if any."""
    this = NIGHTLY.fullmatch(name)
    if this is None:
        return None
    earlier = [
        (m["date"], n)
        for n in names
        if (m := NIGHTLY.fullmatch(n)) and m["base"] == this["base"] and m["date"] < this["date"]
    ]
    return max(earlier)[1] if earlier else None


def night_comparison(state, previous: str, before) -> dict[str, Any]:
    """Tonight's result beside the previous night's: best dev score and sealed test. A change
    is reported only between evaluations on one evaluation-set version; a night forked onto
    the next version (`dev/e2` after `dev/e1`) shows both scores, each labelled, no change."""
    seed, then_seed = state.round(0), before.round(0)
    best = _best_dev(state)
    then = _best_dev(before)
    test, then_test = state.test and state.test.test_score, before.test and before.test.test_score
    dev_on = basis(seed and seed.eval_set, then_seed and then_seed.eval_set)
    test_on = basis(state.test and state.test.eval_set, before.test and before.test.eval_set)
    unpaired = lambda a, b, on: a is None or b is None or not on.comparable  # noqa: E731
    metadata: dict[str, Any] = {
        "previous_night": previous,
        **figures(
            previous_best_dev_score=then,
            best_dev_change_vs_previous_night=None if unpaired(best, then, dev_on) else best - then,
            previous_test_score=then_test,
            test_change_vs_previous_night=None
            if unpaired(test, then_test, test_on)
            else test - then_test,
        ),
    }
    for key, on in (("dev", dev_on), ("test", test_on)):
        if not on.comparable and on.candidate and on.baseline:
            metadata[f"{key}_vs_previous_night"] = on.label
    return metadata


def _best_dev(state) -> float | None:
    """The best dev score on the seed round's evaluation set (never across sets)."""
    seed = state.round(0)
    same = [r for r in state.rounds if seed is None or r.eval_set == seed.eval_set]
    return max((r.dev_score for r in same if r.dev_score is not None), default=None)


def sealed_test(state, *, read_back: bool) -> dict[str, Any]:
    """The one sealed-test result; a materialization after the first says it read it back."""
    test, chosen, seed = state.test, state.promotion, state.round(0)
    when = f"{test.created:%Y-%m-%d %H:%M:%S} UTC"
    return {
        "snapshot_id": test.snapshot_id,
        "promoted_round": chosen.round,
        **figures(
            test_score=test.test_score,
            promoted_dev_score=chosen.dev_score,
            seed_dev_score=seed.dev_score if seed else None,
            dev_test_gap=chosen.dev_score - test.test_score,
        ),
        "tasks": test.test_tasks,
        "evaluated": f"once, at {when}"
        + (
            "; this materialization read that one result back, it is not a second test"
            if read_back
            else "; by this materialization"
        ),
    }


ONCE_AFTER_PROMOTION = host.ONCE_AFTER_PROMOTION


def sealed_check_specs(
    asset: dg.AssetKey, *, gap: bool, once: str = ONCE_AFTER_PROMOTION
) -> list[dg.AssetCheckSpec]:
    """The sealed test's check specs: `once` (evaluated once, after what ends the search),
    disjoint splits, and with `gap` (an algorithm that promotes on a dev score) the gap."""
    names = [once, host.SPLITS, *([host.GAP] if gap else [])]
    return [check_spec(n, asset) for n in names]


def sealed_checks(algorithm, state, threshold: float | None, asset: dg.AssetKey, where: str):
    """The sealed test's checks (`sealed_check_specs`): once after promotion, disjoint
    splits, and, given a `threshold`, the dev-test gap."""
    test, chosen = state.test, state.promotion
    expected = test.test_tasks * algorithm.settings.attempts
    recorded = final_trajectories(
        RolloutRecord(algorithm.layout.test_rollouts), algorithm.settings.max_infra_reruns
    )
    passed = (
        test.snapshot_id == chosen.snapshot_id
        and test.created >= chosen.created
        and len(recorded) == expected
    )
    yield check(host.once(ONCE_AFTER_PROMOTION, passed, len(recorded), expected), where, asset)
    yield splits_check(algorithm, asset, where)
    if threshold is not None:
        yield check(host.dev_test_gap(chosen.dev_score, test.test_score, threshold), where, asset)


def splits_check(algorithm, asset: dg.AssetKey, where: str) -> dg.AssetCheckResult:
    """`splits_disjoint`: train, dev and test share no task (after the test was unsealed)."""
    from flashrsi_dagster.benchmarks.loading import load_splits

    splits = load_splits(algorithm.experiment.config.benchmark, algorithm.benchmark)
    try:
        splits.check_disjoint()  # compared inside `Splits`: the check holds no test task
        overlap = None
    except ValueError as exc:
        overlap = str(exc)
    return check(host.splits_disjoint(overlap), where, asset)
