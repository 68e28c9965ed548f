"""Meta-Harness in words, as the CLI prints it: a line per step, and the whole experiment."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.meta_harness.plan import State


def step_line(state: State, step: Step) -> str:
    if step.round is not None:
        r = state.round(step.round)
        if r is None:
            return f"   round {step.round}: no result"
        score = "" if r.dev_score is None else f", dev score {r.dev_score:.3f}"
        return f"   round {r.round}: {r.status}{score}" + (f" — {r.reason}" if r.reason else "")
    if state.test is not None:
        return f"   sealed test of the promoted snapshot: {state.test.test_score:.3f}"
    return "   promoted" if state.promotion else "   done"


def summary(state: State) -> list[str]:
    lines = []
    for r in state.rounds:
        score = "-" if r.dev_score is None else f"{r.dev_score:.3f}"
        detail = f" ({r.reason})" if r.reason else ""
        lines.append(f"round {r.round}: {r.status:<13} dev {score}{detail}")
    if state.promotion:
        p = state.promotion
        lines.append(f"promoted: round {p.round}, {p.snapshot_id[:12]}, dev {p.dev_score:.3f}")
    if state.test:
        lines.append(f"sealed test: {state.test.test_score:.3f} over {state.test.test_tasks} tasks")
    if any(r.status == "worker_failed" for r in state.rounds):
        lines.append("aborted: the Worker failed (its trajectory is kept in the records)")
    return lines
