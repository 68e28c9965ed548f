"""The Evolver's decisions, derived from its records for the ledger (`decisions.ledger`).

- Every candidate node: `adopt` into the library (scope `library`) when it passed every gate,
  else `reject` (scope `search`) with its state and reason; the evidence is its screen, its
  gate verdicts, its paired statistics against vanilla and, once confirmed, the multi-metric
  comparison with vanilla on the whole train set. A node refused before any run has no
  evaluation set.
- Every round that promoted a node: `adopt` of it as the experiment's baseline.
- A node archived by the operator (`archived-methodology-failure`): `reject` from the library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import Round, State
from flashrsi_dagster.contamination import ContentVerdict
from flashrsi_dagster.decisions.adoption import Refusal, refused_entry
from flashrsi_dagster.decisions.compare import ComparisonError, compare
from flashrsi_dagster.decisions.ledger import (
    EXPERIMENT,
    Decision,
    Evidence,
    Ref,
    eval_set_version,
    raw_paths,
)
from flashrsi_dagster.evaluator import basis
from flashrsi_dagster.records import read_optional
from flashrsi_dagster.stats.behaviour import behaviour

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.evolver.run import Evolver

NAME = "evolver"
PARTS = ("design.json", "content.json", "screen.jsonl", "confirm.jsonl")


def decisions(e: Evolver, state: State) -> list[Decision]:
    made = []
    nodes = {n.id: n for n in e.nodes(state)}
    for rd in state.rounds:
        if rd.plan is None:
            continue
        made += [_node(e, rd.nodes[s]) for s in rd.plan.slots if s in rd.nodes]
        made += [
            _archived(e, rd.nodes[s])
            for s in rd.plan.slots
            if s in rd.nodes and rd.nodes[s].state == "archived-methodology-failure"
        ]
        if rd.decision is not None:
            made += [_refused(e, found, rd.plan.round) for found in rd.decision.refused]
        if rd.decision is not None and rd.decision.promoted is not None:
            made.append(
                _promotion(e, nodes[rd.decision.promoted], rd.decision.reason, rd.plan.round)
            )
    return made


def _refused(e: Evolver, found: Refusal, r: int) -> Decision:
    """A library node the host refused to promote in round r (`decisions.adoption`)."""
    node = found.candidate
    return refused_entry(
        NAME,
        refusal_entry(r, node),
        found,
        Ref(snapshot_id=e.cold_start_record().vanilla_id, round=0),
        raw_paths(
            e.experiment.paths.root,
            e.layout.decision(r),
            e.layout.candidate(node.round or 0, node.slot or "", "confirm.jsonl"),
            e.layout.cold_start_rollouts,
        ),
    )


def node_entry(node_id: str) -> str:
    return f"{NAME}/{node_id}"


def promotion_entry(r: int) -> str:
    return f"{NAME}/promotion/r{r:03d}"


def refusal_entry(r: int, node: Ref) -> str:
    return f"{promotion_entry(r)}/refused/{node.round}.{node.slot}"


def round_entries(rd: Round) -> list[str]:
    """The ledger ids a round's records imply: its nodes' (in slot order), its promotion's."""
    if rd.plan is None:
        return []
    ids = [node_entry(rd.nodes[s].id) for s in rd.plan.slots if s in rd.nodes]
    if rd.decision is not None:
        r, refused = rd.plan.round, rd.decision.refused
        ids += [
            f"{promotion_entry(r)}/refused/{f.candidate.round}.{f.candidate.slot}" for f in refused
        ]
    if rd.decision is not None and rd.decision.promoted is not None:
        ids.append(promotion_entry(rd.plan.round))
    return ids


def ref(node: Node) -> Ref:
    return Ref(
        snapshot_id=node.snapshot_id, round=node.round, slot=node.slot, produced_by=node.produced_by
    )


def _evidence(e: Evolver, node: Node) -> Evidence:
    evidence = Evidence(gates=node.gates, paired=node.paired)
    content = read_optional(
        e.layout.candidate(node.round, node.slot, "content.json"), ContentVerdict
    )
    if node.state == "blocked_l1" and content is not None and content.contaminated:
        evidence.contamination = content.model_dump(mode="json")
    if node.screen is not None:
        evidence.scores = {
            "screen_delta": node.screen["delta"],
            "sigma_screen": node.screen["sigma"],
        }
    if node.confirm_mean is None:
        evidence.not_compared = f"no confirm on the whole train set: {node.state}"
        return evidence
    evidence.scores.update(confirm_mean=node.confirm_mean, vanilla_mean=node.vanilla_mean)
    if not comparable_with_vanilla(e, node):
        evidence.not_compared = basis(node.eval_set, e.cold_start_record().eval_set).label
        return evidence
    confirmed, vanilla = e.confirm_runs(node), e.vanilla_runs()
    signal = behaviour(confirmed, vanilla, e.experiment.config.behaviour)
    evidence.behaviour = signal.model_dump(mode="json")
    try:
        evidence.comparison = compare(
            confirmed, vanilla, e.experiment.config.comparison, eval_set=node.eval_set
        )
    except ComparisonError as exc:
        evidence.not_compared = f"not comparable with vanilla: {exc}"
    return evidence


def comparable_with_vanilla(e: Evolver, node: Node) -> bool:
    """Whether the node's confirm ran on vanilla's version of train (`evaluator.compare`)."""
    return basis(node.eval_set, e.cold_start_record().eval_set).comparable


def _eval_set(node: Node) -> str | None:
    if node.eval_set is not None:
        return node.eval_set
    if node.screen is not None:
        return eval_set_version("train", node.screen["tasks"])
    return None


def _node(e: Evolver, node: Node) -> Decision:
    """The candidate's verdict as its step made it: `decide` appends it (after the round's
    candidates, side by side, all ended), by which time its node may be the promoted one."""
    parts = [e.layout.candidate(node.round, node.slot, p) for p in PARTS]
    made = "in_library" if node.state == "promoted_to_baseline" else node.state
    return Decision(
        id=node_entry(node.id),
        decision="adopt" if node.library else "reject",
        algorithm=NAME,
        scope="library" if node.library else "search",
        candidate=ref(node),
        baseline=Ref(snapshot_id=node.parent_id),
        reason=f"{made}: {node.reason}",
        evidence=_evidence(e, node),
        eval_set=_eval_set(node),
        raw=raw_paths(e.experiment.paths.root, e.layout.node(node.id), *parts),
    )


def _archived(e: Evolver, node: Node) -> Decision:
    """An operator's archival: the node leaves the library (its earlier entry stays)."""
    return Decision(
        id=f"{NAME}/archived/{node.id}",
        decision="reject",
        algorithm=NAME,
        scope="library",
        candidate=ref(node),
        baseline=Ref(snapshot_id=node.parent_id),
        reason=f"archived-methodology-failure: {node.reason}",
        evidence=Evidence(gates=node.gates, paired=node.paired),
        eval_set=_eval_set(node),
        raw=raw_paths(e.experiment.paths.root, e.layout.node(node.id)),
    )


def _promotion(e: Evolver, node: Node, reason: str, r: int) -> Decision:
    return Decision(
        id=promotion_entry(r),
        decision="adopt",
        algorithm=NAME,
        scope=EXPERIMENT,
        candidate=ref(node),
        baseline=Ref(snapshot_id=e.cold_start_record().vanilla_id, round=0),
        reason=f"round {r}: {reason}",
        evidence=_evidence(e, node),
        eval_set=node.eval_set,
        raw=raw_paths(
            e.experiment.paths.root,
            e.layout.decision(r),
            e.layout.candidate(node.round, node.slot, "confirm.jsonl"),
            e.layout.cold_start_rollouts,
        ),
    )
