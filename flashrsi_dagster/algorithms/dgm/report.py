"""DGM in lines: one per candidate (its archive edges, scores by stage, admitted or why
not), the promotion, the sealed tests."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.dgm.plan import State
from flashrsi_dagster.algorithms.dgm.records import CandidateRecord


def short(snapshot_id: str | None) -> str:
    return snapshot_id[:12] if snapshot_id else "-"


def candidate_line(c: CandidateRecord) -> str:
    name = "seed" if c.generation == 0 else f"gen {c.generation} {c.slot}"
    stages = " -> ".join(f"{s:.3f}/{n}" for s, n in zip(c.stage_scores, c.stage_tasks, strict=True))
    edges = "" if c.generation == 0 else f" parent {short(c.parent_id)} by {_maker(c)} on {c.entry}"
    outcome = f"train {stages}" if c.admitted else "; ".join(c.reasons)
    return f"{name}: {c.status} {short(c.snapshot_id)}{edges} — {outcome}"


def _maker(c: CandidateRecord) -> str:
    return short(c.produced_by) if c.produced_by else "worker"


def step_line(state: State, step: Step) -> str:
    if step.round is not None and (c := state.candidate(step.round, step.slot or "c0")):
        return "   " + candidate_line(c)
    if step.action == "promote" and (p := state.promotion):
        name = f"gen {p.generation} {p.slot} ({short(p.snapshot_id)})"
        return f"   promoted {name}, dev {p.dev_score:.3f}"
    if state.tests:
        return "   " + "; ".join(
            f"sealed test {short(t.snapshot_id)}: {t.test_score:.3f}" for t in state.tests
        )
    return "   done"


def summary(state: State) -> list[str]:
    lines = [candidate_line(c) for c in state.candidates]
    best = max((c.score or 0.0 for c in state.admitted()), default=None)
    lines += [
        f"archive: {len(state.admitted())} admitted of {len(state.candidates)}"
        + (f", best train {best:.3f}" if best is not None else "")
    ]
    lines += stepping_stones(state)
    for d in state.devs:
        lines.append(f"dev: gen {d.generation} {d.slot} {short(d.snapshot_id)} {d.dev_score:.3f}")
    if p := state.promotion:
        lines.append(
            f"promoted: gen {p.generation} {p.slot}, {short(p.snapshot_id)}, dev {p.dev_score:.3f}"
        )
    for i, t in enumerate(state.tests, start=1):
        lines.append(
            f"sealed test {i}: {short(t.snapshot_id)} {t.test_score:.3f} over {t.test_tasks} tasks"
        )
    return lines


def stepping_stones(state: State) -> list[str]:
    """Admitted members that scored below their parent yet have a child that beat every
    member but its siblings: what the archive keeps low scorers for."""
    admitted = state.admitted()
    found = []
    for stone in admitted:
        parent = state.of(stone.parent_id)
        if parent is None or (stone.score or 0.0) >= (parent.score or 0.0):
            continue
        children = [c for c in admitted if c.parent_id == stone.snapshot_id]
        for child in children:
            others = [c.score or 0.0 for c in admitted if c not in children]
            if (child.score or 0.0) > max(others, default=0.0):
                found.append(
                    f"stepping stone: gen {stone.generation} {stone.slot} "
                    f"({short(stone.snapshot_id)}) scored {stone.score:.3f} < its parent's "
                    f"{parent.score:.3f}; its child gen {child.generation} {child.slot} scored "
                    f"{child.score:.3f}, above every member but its siblings"
                )
    return found
