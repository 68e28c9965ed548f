"""The host's checks on a candidate and on the sealed test, each evaluated from its inputs
into a `CheckOutcome`: whether it passed, its severity, why, and its figures.

The Dagster layer reports these as asset checks (`orchestration/describe.py`, with the
descriptions below as their specs'); the explorer evaluates the same functions on a node's
records (`explorer/checks.py`)."""

from __future__ import annotations

from typing import Any

from flashrsi_dagster.checks.outcome import CheckOutcome
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.stats.behaviour import BehaviourSignal, line
from flashrsi_dagster.views import round_figures

EDIT_PATHS = "edit_within_declared_paths"
CONTENT = "content_not_contaminated"
SCORE_RANGE = "score_in_unit_interval"
BEHAVIOUR = "behaviour_consistent_with_parent"
ADOPTED = "edit_adopted"
ONCE_AFTER_PROMOTION = "evaluated_once_after_promotion"
ONCE_AFTER_TERMINATION = "evaluated_once_after_termination"
SPLITS = "splits_disjoint"
GAP = "dev_test_gap"

DESCRIPTIONS = {
    EDIT_PATHS: "Every path the committed edit changed is declared in components.yaml.",
    CONTENT: "The candidate's files carry none of the benchmark's tasks or answers (every "
    "split; plain, escaped, base64, hex, compressed, hashed): the contamination check made "
    "before it was scored. Fails with the evidence when it rejected it.",
    SCORE_RANGE: "The dev score lies in [0, 1] over tasks x attempts, every rollout counted "
    "(infrastructure failures as 0).",
    BEHAVIOUR: "Warns when the candidate scores higher than its parent on the same tasks with "
    "far fewer model calls or tokens (the gateway's count), or answered a task with no model "
    "call where the parent made some (thresholds: the experiment's `behaviour` section). A "
    "warning, never a rejection.",
    ADOPTED: "The step's outcome where the partition grid's green says only that it ran: "
    "passes when its edit was adopted, warns (with the reason) when it was rejected or changed "
    "nothing. A search rejects most edits: a warning, not an error.",
    ONCE_AFTER_PROMOTION: "One sealed-test record, of the promoted snapshot, written after the "
    "promotion, with exactly tasks x attempts rollouts.",
    ONCE_AFTER_TERMINATION: "One retention report, written after the search terminated: the "
    "baseline and each delivered version scored on test, each with exactly tasks x K rollouts.",
    SPLITS: "Train, dev and test share no task id, instruction or checksum.",
    GAP: "Warns when the promoted dev score exceeds the test score by more than the configured "
    "threshold (`experiments_home.dev_test_gap_warning`).",
}
"""Each check's description: its Dagster spec's, and the explorer's."""


def figures(**values: float | int | None) -> dict[str, Any]:
    """Numbers for metadata, rounded as every view rounds them (None shows as "-")."""
    return {name: "-" if v is None else v for name, v in round_figures(values).items()}


def edit_within_declared_paths(store: SnapshotStore, info: dict) -> CheckOutcome:
    """Every path a committed edit changed is declared by its parent's components."""
    child, parent = info.get("snapshot_id"), info.get("parent_id")
    if not (child and parent):
        edit = f"none ({info['status']})"
        return CheckOutcome(
            name=EDIT_PATHS,
            passed=True,
            severity="error",
            summary=f"no edit: {edit}",
            metadata={"edit": edit},
        )
    declared = store.get(parent).components
    changed = [c.path for c in store.changed_paths(parent, child)]
    outside = [p for p in changed if not declared.declares(p)]
    summary = (
        f"changed outside the declared paths: {', '.join(outside)}"
        if outside
        else f"{len(changed)} changed path(s), all declared"
    )
    found = {"changed": len(changed), "outside_declared_paths": ", ".join(outside) or "-"}
    return CheckOutcome(
        name=EDIT_PATHS, passed=not outside, severity="error", summary=summary, metadata=found
    )


def content(verdict: ContentVerdict | None, unchecked: str) -> CheckOutcome:
    """The candidate's contamination verdict (`unchecked`: why it has none, e.g. the seed,
    or an edit refused before it)."""
    if verdict is None:
        return CheckOutcome(
            name=CONTENT,
            passed=True,
            severity="error",
            summary=f"not checked: {unchecked}",
            metadata={"checked": f"no: {unchecked}"},
        )
    metadata = {
        "snapshot_id": verdict.snapshot_id,
        "judged_against": verdict.baseline_id,
        "changed_files": verdict.files,
        "rules": "; ".join(verdict.rules) or "-",
        "hits": verdict.hit_count,
        **{f"tasks_{split}": n for split, n in verdict.tasks.items()},
        **{f"{split}_task_ids": ", ".join(ids) for split, ids in verdict.named.items()},
    }
    summary = (
        f"contaminated: {'; '.join(verdict.rules) or 'benchmark content found'}"
        if verdict.contaminated
        else f"no benchmark content in {verdict.files} changed file(s)"
    )
    return CheckOutcome(
        name=CONTENT,
        passed=not verdict.contaminated,
        severity="error",
        summary=summary,
        metadata=metadata,
        markdown={"evidence": content_hits_markdown(verdict)},
    )


def content_hits_markdown(verdict: ContentVerdict, limit: int = 50) -> str:
    if not verdict.hits:
        return "_no benchmark content in the changed files_"
    rows = [
        "| rule | task | split | secret | file | lines | encoding |",
        "|---|---|---|---|---|---|---|",
    ]
    for h in verdict.hits[:limit]:
        task = h.task_id or "_held out, not named_"
        lines = f"{h.lines[0]}-{h.lines[1]}" if h.lines[1] != h.lines[0] else str(h.lines[0])
        rows.append(
            f"| {h.rule} | {task} | {h.split} | {h.secret} | {h.file} | {lines} | {h.encoding} |"
        )
    if verdict.hit_count > limit:
        rows.append(f"\n_{verdict.hit_count - limit} more hit(s) in the verdict record_")
    return "\n".join(rows)


def score_in_unit_interval(table: dict, denominator: int) -> CheckOutcome:
    """The dev score over its fixed denominator, every rollout counted."""
    if not table:
        return CheckOutcome(
            name=SCORE_RANGE,
            passed=True,
            severity="error",
            summary="no rollouts to score",
            metadata={"rollouts": 0},
        )
    score, missing = table["score"], table["missing"]
    passed = score is not None and 0.0 <= score <= 1.0 and missing == 0
    summary = f"score {score} over {denominator}, {missing} rollout(s) missing"
    return CheckOutcome(
        name=SCORE_RANGE,
        passed=passed,
        severity="error",
        summary=summary,
        metadata={**figures(score=score), "denominator": denominator, "missing": missing},
    )


def behaviour(signal: BehaviourSignal | str) -> CheckOutcome:
    """A warning (not passed, severity warn) when `signal` is flagged, with its figures;
    passed with a note when there was nothing to compare (`signal` is then the reason: no
    parent, no rollouts, no metered usage)."""
    if isinstance(signal, str) or signal.verdict == "not_compared":
        note = signal if isinstance(signal, str) else line(signal)
        return CheckOutcome(
            name=BEHAVIOUR,
            passed=True,
            severity="warn",
            summary=f"not compared: {note}",
            metadata={"compared": note},
        )
    s, limits = signal, signal.thresholds
    metadata = {
        "verdict": s.verdict,
        "summary": line(s),
        **figures(
            calls_per_task_candidate=s.calls_candidate,
            calls_per_task_parent=s.calls_parent,
            calls_ratio=s.calls_ratio,
            tokens_per_task_candidate=s.tokens_candidate,
            tokens_per_task_parent=s.tokens_parent,
            tokens_ratio=s.tokens_ratio,
            calls_ratio_median_task=s.calls_ratio_median,
            tokens_ratio_median_task=s.tokens_ratio_median,
            score_candidate=s.score_candidate,
            score_parent=s.score_parent,
            score_delta=s.score_delta,
            max_calls_ratio=limits.max_calls_ratio,
            max_tokens_ratio=limits.max_tokens_ratio,
        ),
        "tasks": s.tasks,
        "unmetered_tasks": s.unmetered,
        "zero_call_tasks": ", ".join(s.zero_call_tasks) or "-",
    }
    return CheckOutcome(
        name=BEHAVIOUR, passed=not s.flagged, severity="warn", summary=line(s), metadata=metadata
    )


def adopted(outcome: str, reason: str | None, was_adopted: bool) -> CheckOutcome:
    """A step's outcome: passed when its edit was adopted, else a warning with the reason."""
    said = reason and reason.startswith(outcome)  # "promoted: the best dev score, ..."
    summary = reason if said else outcome + (f": {reason}" if reason else "")
    return CheckOutcome(
        name=ADOPTED,
        passed=was_adopted,
        severity="warn",
        summary=summary,
        metadata={"outcome": outcome, "reason": reason or "-"},
    )


KEPT = ("promoted", "adopted", "archived")
"""The ledger outcomes that keep an edit (`explorer.candidates.outcome`'s words)."""


def decided(outcome: str, reason: str) -> CheckOutcome:
    """`adopted` for a candidate the ledger judged, its outcome in the explorer's words:
    kept (promoted, adopted, archived) passes, rejected or pruned is a warning."""
    return adopted(outcome, reason, outcome in KEPT)


def once(name: str, passed: bool, recorded: int, expected: int) -> CheckOutcome:
    """The sealed test evaluated once, after what ends the search (`name` says which)."""
    summary = (
        f"{recorded} rollout(s) of the {expected} expected"
        if passed
        else f"not evaluated once as required: {recorded} rollout(s) of {expected} expected"
    )
    return CheckOutcome(
        name=name,
        passed=passed,
        severity="error",
        summary=summary,
        metadata={"rollouts": recorded, "expected": expected},
    )


def splits_disjoint(overlap: str | None) -> CheckOutcome:
    """Train, dev and test share nothing (`overlap`: what they share, as `Splits` says)."""
    return CheckOutcome(
        name=SPLITS,
        passed=overlap is None,
        severity="error",
        summary=overlap or "train, dev and test share no task",
        metadata={"overlap": overlap or "-"},
    )


def dev_test_gap(dev_score: float, test_score: float, threshold: float) -> CheckOutcome:
    """A warning when the promoted dev score exceeds the test score by more than
    `threshold`."""
    gap = dev_score - test_score
    summary = (
        f"dev {dev_score:.3f} exceeds test {test_score:.3f} by {gap:.3f}, over the "
        f"{threshold:.3f} threshold"
        if gap > threshold
        else f"dev-test gap {gap:.3f} within the {threshold:.3f} threshold"
    )
    return CheckOutcome(
        name=GAP,
        passed=gap <= threshold,
        severity="warn",
        summary=summary,
        metadata=figures(dev_test_gap=gap, threshold=threshold),
    )
