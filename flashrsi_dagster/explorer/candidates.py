"""An experiment's candidates as one tree, the same model for every algorithm.

Built on the decision ledger (`decisions/ledger.py`), which every algorithm writes alike: each
entry names a candidate snapshot with its round, slot and the harness that produced it, what
was decided and why, and its evidence. A snapshot's parent is its parent commit in the
snapshot store (what it was edited from), so the diff a node shows is the edit it holds.
Snapshots the ledger names only as baselines, or only as parents, are nodes too (the seed).

The sealed test's result is read only once it is on record: an algorithm writes it after the
experiment is finalised, so before that nothing of it exists to show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.decisions.ledger import EXPERIMENT, Decision, Ledger
from flashrsi_dagster.experiment.paths import ExperimentPaths
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.snapshots.store import SnapshotError

Outcome = Literal["promoted", "adopted", "rejected", "pruned", "archived", "seed", "unjudged"]
PRIMARY_SCORES = ("dev_score", "score", "confirm_mean", "train_score", "mean")
"""The evidence score a node is labelled with, the first of these it has (else the first that
is not the baseline's)."""
BASELINE_PREFIXES = ("baseline_", "seed_", "vanilla_")
"""How evidence names the baseline's own scores (`baseline_dev_score`, DGM's
`seed_train_score`, the Evolver's `vanilla_mean`)."""
RANK: dict[str, int] = {"promoted": 5, "adopted": 4, "archived": 3, "pruned": 2, "rejected": 1}
"""A candidate judged more than once shows its strongest outcome (a DGM candidate admitted to
the archive, then not promoted, is archived); every decision stays listed in its panel."""


class SealedTest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    snapshot_id: str
    score: float | None
    tasks: int | None
    record: str = Field(description="The record, relative to the experiment folder.")
    by_snapshot: dict[str, float | None] = Field(
        default_factory=dict,
        description="Every tested version's score (the Evolver's; Meta-Harness's frontier).",
    )


class Node(BaseModel):
    """One candidate: a snapshot (or an edit that committed nothing) and what became of it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The snapshot id, or `r<round>.<slot>` for an empty edit.")
    snapshot_id: str | None
    parent: str | None = Field(description="The node it was edited from (its parent commit).")
    produced_by: str | None = Field(description="The adopted harness that made it, if any.")
    round: int | None
    slot: str | None
    outcome: Outcome
    scope: str | None = Field(description="What an adoption made it the baseline of.")
    reason: str = ""
    score: float | None = None
    scores: dict[str, float | int | None] = Field(default_factory=dict)
    verdict: str | None = Field(None, description="The paired statistics' verdict.")
    tokens: float | None = Field(
        None,
        description="Its mean target tokens per task, where the behaviour signal "
        "measured them (the accuracy x tokens plot's x).",
    )
    sealed_test: float | None = Field(None, description="Its sealed test score, once public.")
    decisions: list[str] = Field(default_factory=list, description="Its ledger entries' ids.")


class Tree(BaseModel):
    model_config = ConfigDict(extra="forbid")

    experiment: str
    algorithm: str
    nodes: list[Node]
    baseline: str | None = Field(description="The experiment's baseline now (its last adopt).")
    sealed_test: SealedTest | None = Field(description="None until the experiment is finalised.")


def candidate_tree(
    paths: ExperimentPaths,
    algorithm: str,
    entries: list[Decision] | None = None,
    store: SnapshotStore | None = None,
) -> Tree:
    """The tree from the ledger's `entries` and the snapshot `store` (read from `paths` when
    not given: the explorer's cache passes the ones it keeps)."""
    entries = Ledger(paths.root).entries() if entries is None else entries
    nodes: dict[str, Node] = {}
    for entry in entries:
        _judge(nodes, entry)
    for entry in entries:
        _baseline_node(nodes, entry)
    store = open_store(paths) if store is None else store
    if store is not None:
        _link_parents(nodes, store)
    sealed = sealed_test(paths)
    for snapshot_id, score in (sealed.by_snapshot if sealed else {}).items():
        if snapshot_id in nodes:
            nodes[snapshot_id].sealed_test = score
    last = next((d for d in reversed(entries) if d.scope == EXPERIMENT), None)
    return Tree(
        experiment=paths.root.name,
        algorithm=algorithm,
        nodes=sorted(nodes.values(), key=lambda n: (n.round is None, n.round or 0, n.id)),
        baseline=last.candidate.snapshot_id if last else None,
        sealed_test=sealed,
    )


def open_store(paths: ExperimentPaths) -> SnapshotStore | None:
    """The experiment's snapshot store, None where none was made (never made here)."""
    return SnapshotStore(paths.snapshots) if SnapshotStore.made_at(paths.snapshots) else None


def node_id(ref) -> str:
    return ref.snapshot_id or f"r{ref.round}.{ref.slot}"


def _judge(nodes: dict[str, Node], entry: Decision) -> None:
    """The node of the entry's candidate, judged by its latest entry."""
    ref = entry.candidate
    key = node_id(ref)
    known = nodes.get(key)
    scores = {**(known.scores if known else {}), **entry.evidence.scores}
    paired = entry.evidence.paired or {}
    judged = outcome(entry)
    if known is not None and RANK.get(known.outcome, 0) > RANK[judged]:
        judged, reason, scope = known.outcome, known.reason, known.scope
    else:
        reason, scope = entry.reason, entry.scope if entry.decision != "reject" else None
    nodes[key] = Node(
        id=key,
        snapshot_id=ref.snapshot_id,
        parent=known.parent if known else None,
        produced_by=ref.produced_by or (known.produced_by if known else None),
        round=ref.round if ref.round is not None else (known.round if known else None),
        slot=ref.slot or (known.slot if known else None),
        outcome=judged,
        scope=scope,
        reason=reason,
        score=primary_score(scores),
        scores=scores,
        verdict=paired.get("verdict") or (known.verdict if known else None),
        tokens=_tokens(entry, "tokens_candidate") or (known.tokens if known else None),
        decisions=[*(known.decisions if known else []), entry.id],
    )


def outcome(entry: Decision) -> Outcome:
    """What the entry made of its candidate, in the words the page colours by."""
    if entry.decision == "rollback" or (entry.decision == "adopt" and entry.scope == EXPERIMENT):
        return "promoted"
    if entry.decision == "adopt":
        return "archived" if entry.scope.startswith("archive") else "adopted"
    reason = entry.reason.lower()
    if "prune" in reason:
        return "pruned"
    return "rejected"


def primary_score(scores: dict[str, Any]) -> float | None:
    for name in PRIMARY_SCORES:
        if isinstance(scores.get(name), (int, float)):
            return float(scores[name])
    own = [v for k, v in scores.items() if not k.startswith(BASELINE_PREFIXES) and v is not None]
    return float(own[0]) if own else None


def _baseline_node(nodes: dict[str, Node], entry: Decision) -> None:
    """The entry's baseline as a node when no entry judged it (the seed), with the baseline
    score the entry compared against; a judged one without a score of its own gets that."""
    ref = entry.baseline
    if ref.snapshot_id is None:
        return
    scores = {
        k.removeprefix(prefix): v
        for k, v in entry.evidence.scores.items()
        for prefix in BASELINE_PREFIXES
        if k.startswith(prefix)
    }
    known = nodes.get(ref.snapshot_id)
    if known is not None:
        known.tokens = known.tokens or _tokens(entry, "tokens_parent")
        if known.score is None and primary_score(scores) is not None:
            known.scores = {**scores, **known.scores}
            known.score = primary_score(scores)
        return
    nodes[ref.snapshot_id] = Node(
        id=ref.snapshot_id,
        snapshot_id=ref.snapshot_id,
        parent=None,
        produced_by=ref.produced_by,
        round=ref.round,
        slot=ref.slot,
        outcome="seed",
        scope=None,
        reason="the baseline the candidates were compared with",
        score=primary_score(scores),
        scores=scores,
        tokens=_tokens(entry, "tokens_parent"),
    )


def _tokens(entry: Decision, key: str) -> float | None:
    """The candidate's (or its baseline's) tokens the behaviour signal measured, if it did."""
    value = (entry.evidence.behaviour or {}).get(key)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _link_parents(nodes: dict[str, Node], store: SnapshotStore) -> None:
    """Each snapshot's parent commit; an ancestor no entry names becomes a node too, so that
    every edge ends at a node. The parents come from one listing of the store's refs."""
    known = store.parent_ids()

    def parent_of(snapshot_id: str) -> str | None:
        if snapshot_id in known:
            return known[snapshot_id]
        return store.get(snapshot_id).parent_id  # a prefix, or a ref made since the listing

    pending = [n for n in nodes.values() if n.snapshot_id]
    while pending:
        node = pending.pop()
        try:
            parent = parent_of(node.snapshot_id)
        except SnapshotError:
            continue  # named by the ledger, not in the store: shown without a parent
        node.parent = parent
        if parent is not None and parent not in nodes:
            seed = parent_of(parent) is None
            nodes[parent] = Node(
                id=parent,
                snapshot_id=parent,
                parent=None,
                produced_by=None,
                round=0 if seed else None,
                slot=None,
                outcome="seed" if seed else "unjudged",
                scope=None,
                reason="an ancestor no decision names",
            )
            pending.append(nodes[parent])


SEALED_RECORDS = ("test*.json", "retention.json")
"""Where an algorithm's folder keeps its test results: `test.json` (`sealed_test`, the shared
record; STOP's `stop_test`), DGM's `test-<rank>.json`, Meta-Harness's frontier tests
`test-round-<k>[-<slot>].json`, the Evolver's `retention.json`."""


def sealed_test(paths: ExperimentPaths) -> SealedTest | None:
    """The sealed test's result once an algorithm has written it: None before the experiment
    is finalised. Where several versions were tested (the Evolver's retention), the last
    delivered one, with every version's score in `by_snapshot`; Meta-Harness's frontier
    tests (`tested_as: frontier`) only add their scores there: the promoted one's is the
    result."""
    chosen, frontier = None, {}
    for pattern in SEALED_RECORDS:
        for record in sorted(paths.records.glob(f"*/{pattern}")):
            value = _read(record)
            found = _test_result(value, record.relative_to(paths.root).as_posix())
            if found is not None and value.get("tested_as") == "frontier":
                frontier.update(found.by_snapshot)
            elif found is not None and chosen is None:
                chosen = found
    if chosen is not None:
        chosen.by_snapshot = {**frontier, **chosen.by_snapshot}
    return chosen


def _read(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _test_result(value: dict, record: str) -> SealedTest | None:
    if value.get("kind") in {"sealed_test", "stop_test"}:
        score = value.get("test_score")
        return SealedTest(
            snapshot_id=value["snapshot_id"],
            score=score,
            tasks=value.get("test_tasks"),
            record=record,
            by_snapshot={value["snapshot_id"]: score},
        )
    if value.get("kind") == "evolver_retention" and value.get("rows"):
        last = value["rows"][-1]
        return SealedTest(
            snapshot_id=last["snapshot_id"],
            score=last.get("test"),
            tasks=None,
            record=record,
            by_snapshot={row["snapshot_id"]: row.get("test") for row in value["rows"]},
        )
    return None
