"""How a round ends and how the run ends.

`decide_round`: the funnel's seventh step (`decide.decide`): the library's best becomes the
parent (its node rewritten `promoted_to_baseline`), or the parent is kept; the human log
(`findings.md`, a section per round), `history.json` (attempts by WHY) and the QD archive
(`archive.json`) are written from the records, then the decision, which ends the step.

`unseal_retention`: the Evolver's one path to the test split (`Searching.unseal_test`, open
on the sealed test's turn only). The baseline and every version a round
delivered (promoted) are scored on test once, and the report says how much of each train lift
held. Nothing the search decided can change after it: termination already happened.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.evolver.archive import elites
from flashrsi_dagster.algorithms.evolver.history import findings_section, why_history
from flashrsi_dagster.algorithms.evolver.next_parent import decide, rank_key
from flashrsi_dagster.algorithms.evolver.nodes import Node
from flashrsi_dagster.algorithms.evolver.plan import State
from flashrsi_dagster.algorithms.evolver.records import RetentionReport, RoundDecision
from flashrsi_dagster.algorithms.evolver.sealed import Delivered, retention
from flashrsi_dagster.decisions.adoption import Refusal, first_admitted

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.evolver.run import Evolver


def decide_round(e: Evolver, state: State, r: int) -> RoundDecision:
    current = state.round(r)
    assert current is not None and current.plan is not None
    plan = current.plan
    nodes = [current.nodes[s] for s in plan.slots]
    everything = e.nodes(state)
    parent = next((n for n in everything if n.library and n.snapshot_id == plan.parent_id), None)
    vanilla = e.cold_start_record().vanilla_id
    library = [n for n in everything if n.library and n.snapshot_id not in state.set_aside]
    library, refused = vetted(e, state, library, parent)
    decision = decide(r, nodes, library, parent, vanilla)
    decision = decision.model_copy(update={"refused": refused})
    if plan.error is not None:
        decision = decision.model_copy(
            update={"outcome": "errored", "reason": f"{plan.error}; the parent is kept"}
        )
    if decision.promoted is not None:
        promoted = next(n for n in everything if n.id == decision.promoted)
        e.write(
            e.layout.node(promoted.id),
            promoted.model_copy(update={"state": "promoted_to_baseline"}),
        )
    write_logs(e, e.read_state(), (r, decision))
    return e.write(e.layout.decision(r), decision)


def vetted(
    e: Evolver, state: State, library: list[Node], parent: Node | None
) -> tuple[list[Node], list[Refusal]]:
    """The library without the nodes whose adoption the host refuses (`decisions.adoption`):
    best first, each is vetted against vanilla until one may be adopted or the parent (the
    baseline already) comes; a node refused by an earlier round stays out unvetted."""
    earlier = {
        f.candidate.snapshot_id for rd in state.rounds if rd.decision for f in rd.decision.refused
    }
    library = [n for n in library if n.snapshot_id not in earlier]
    ranked = sorted(library, key=rank_key)

    def vet(node: Node | None) -> Refusal | None:
        if node is None or (parent is not None and node.id == parent.id):
            return None
        return e.adoption_refusal(node)

    _, refused = first_admitted([*ranked, None], vet)
    out = {f.candidate.snapshot_id for f in refused}
    return [n for n in library if n.snapshot_id not in out], refused


def write_logs(e: Evolver, state: State, pending: tuple[int, RoundDecision]) -> None:
    """findings.md, history.json and archive.json, from the records (and the decision of
    round `pending[0]`, written right after)."""
    nodes = e.nodes(state)
    cold = e.cold_start_record()
    sections = [
        "# Evolver findings",
        "",
        f"Cold start: vanilla `{cold.vanilla_id[:12]}`, K={cold.k}, mean {cold.mean:.4f} on "
        f"{cold.eval_set}; taxonomy {cold.taxonomy}; {cold.failing} failing train task(s).",
        "",
    ]
    for rd in state.rounds:
        decision = rd.decision or (pending[1] if rd.plan and rd.plan.round == pending[0] else None)
        if rd.plan is not None and decision is not None:
            ordered = [rd.nodes[s] for s in rd.plan.slots if s in rd.nodes]
            sections.append(findings_section(rd.plan, ordered, decision))
    e.experiment.records.write_bytes(e.layout.findings, "\n".join(sections).encode("utf-8"))
    e.experiment.records.write_bytes(e.layout.history, _json(history_of(nodes)))
    e.experiment.records.write_bytes(e.layout.archive, _json(archive_of(nodes)))


def history_of(nodes: list[Node]) -> dict:
    counts = why_history(nodes)
    return {
        why: {
            "failed": counts[why].failed,
            "inert": counts[why].inert,
            "attempts": [{"node": n.id, "state": n.state} for n in nodes if n.why == why],
        }
        for why in sorted(counts)
    }


def archive_of(nodes: list[Node]) -> dict:
    return {
        cell: {"node": n.id, "snapshot_id": n.snapshot_id, "confirm_mean": n.confirm_mean}
        for cell, n in sorted(elites(nodes).items())
    }


def _json(value: dict) -> bytes:
    return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def delivered(e: Evolver, state: State) -> list[tuple[str, str, float]]:
    """(label, snapshot, train score): vanilla, then each round's promoted version."""
    cold = e.cold_start_record()
    rows = [("vanilla", cold.vanilla_id, cold.mean)]
    nodes = {n.id: n for n in e.nodes(state)}
    for rd in state.rounds:
        if rd.decision is not None and rd.decision.promoted is not None:
            node = nodes[rd.decision.promoted]
            assert node.snapshot_id is not None and node.confirm_mean is not None
            rows.append((f"round {rd.decision.round}", node.snapshot_id, node.confirm_mean))
    return rows


def unseal_retention(e: Evolver, state: State) -> RetentionReport:
    tasks = e.unseal_test()
    version = e.evaluator.before_sealed_test(tasks)
    k = e.config.k
    scored = []
    for label, snapshot_id, train in delivered(e, state):
        path = e.layout.test_rollouts(label)
        snapshot = e.experiment.snapshots.get(snapshot_id)
        test = e.score(snapshot, tasks, path, "test", attempts=k)
        scored.append(Delivered(label, snapshot_id, train, test))
    rows = [
        {
            "label": row.delivered.label,
            "snapshot_id": row.delivered.snapshot_id,
            "train": row.delivered.train,
            "test": row.delivered.test,
            "train_lift": row.train_lift,
            "test_lift": row.test_lift,
            "retained": row.retained,
        }
        for row in retention(scored)
    ]
    report = RetentionReport(rows=rows, eval_set=version.label, k=k)
    return e.write(e.layout.retention, report)
