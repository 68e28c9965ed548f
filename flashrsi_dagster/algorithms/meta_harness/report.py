"""Meta-Harness in words, as the CLI prints it: a line per step, and the whole experiment.
A candidate is named by its round, and by its slot too where that is not c0."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.meta_harness.frontier import frontier
from flashrsi_dagster.algorithms.meta_harness.plan import SLOT, State, candidate_name


def step_line(state: State, step: Step) -> str:
    if step.round is not None:
        slot = step.slot or SLOT
        name, r = candidate_name(step.round, slot), state.round(step.round, slot)
        if r is None:
            return f"   {name}: no result"
        score = "" if r.dev_score is None else f", dev score {r.dev_score:.3f}"
        return f"   {name}: {r.status}{score}" + (f" — {r.reason}" if r.reason else "")
    if state.test is not None:
        return f"   sealed test of the promoted snapshot: {state.test.test_score:.3f}"
    return "   promoted" if state.promotion else "   done"


def summary(state: State) -> list[str]:
    lines = []
    for r in state.rounds:
        score = "-" if r.dev_score is None else f"{r.dev_score:.3f}"
        detail = f" ({r.reason})" if r.reason else ""
        made = f", made by {_maker(state, r.produced_by)}" if r.produced_by else ""
        lines.append(f"{candidate_name(r.round, r.slot)}: {r.status:<13} dev {score}{made}{detail}")
    lines += frontier_lines(state)
    if state.promotion:
        p = state.promotion
        name = candidate_name(p.round, p.slot)
        lines.append(f"promoted: {name}, {p.snapshot_id[:12]}, dev {p.dev_score:.3f}")
    if state.test:
        lines.append(f"sealed test: {state.test.test_score:.3f} over {state.test.test_tasks} tasks")
    lines += frontier_test_lines(state)
    if any(r.aborts for r in state.rounds):
        lines.append("aborted: the Worker failed (its trajectory is kept in the records)")
    return lines


def frontier_lines(state: State) -> list[str]:
    """The Pareto frontier of dev score x context tokens per task (`frontier.py`)."""
    members = [
        f"{p.name} (dev {p.dev_score:.3f}, {p.context_tokens_per_task:.0f} tokens/task)"
        for p in frontier(state.rounds)
    ]
    return [f"frontier (dev x context tokens): {', '.join(members)}"] if members else []


def frontier_test_lines(state: State) -> list[str]:
    """Each other frontier member's one sealed test (`sealed_test_frontier`): reported, never
    chosen by (the promotion stands)."""
    members = {
        sid: (k, slot) for k, slot, sid in (state.promotion.frontier if state.promotion else [])
    }
    lines = []
    for t in state.frontier_tests:
        name = candidate_name(*members[t.snapshot_id])
        lines.append(
            f"sealed test of frontier member {name} (not promoted): {t.test_score:.3f} "
            f"over {t.test_tasks} tasks"
        )
    return lines


def _maker(state: State, snapshot_id: str) -> str:
    """The candidate whose harness made another (`worker.harness: adopted`)."""
    maker = state.candidate_of(snapshot_id)
    name = candidate_name(maker.round, maker.slot) if maker else "snapshot"
    return f"{name}'s harness ({snapshot_id[:12]})"
