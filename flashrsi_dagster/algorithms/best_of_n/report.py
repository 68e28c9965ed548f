"""Best-of-N in words, as the CLI prints it: a line per step, and the whole experiment with
the budget it spent against the one it was given (or matched)."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.best_of_n.plan import SLOT, State, candidate_name, stopped


def step_line(state: State, step: Step, width: int) -> str:
    if step.round is not None:
        name = candidate_name(step.round, step.slot or SLOT, width)
        r = state.round(step.round, step.slot or SLOT)
        if r is None:
            return f"   {name}: no result"
        score = "" if r.dev_score is None else f", dev score {r.dev_score:.3f}"
        return f"   {name}: {r.status}{score}" + (f" — {r.reason}" if r.reason else "")
    if state.test is not None:
        return f"   sealed test of the promoted snapshot: {state.test.test_score:.3f}"
    return "   promoted" if state.promotion else "   done"


def summary(state: State, cap: int, width: int) -> list[str]:
    lines = []
    for r in state.rounds:
        score = "-" if r.dev_score is None else f"{r.dev_score:.3f}"
        lines_changed = f"{r.changed_lines} line{'' if r.changed_lines == 1 else 's'} changed"
        detail = f" ({r.reason})" if r.reason else f" ({lines_changed})"
        name = candidate_name(r.round, r.slot, width)
        lines.append(f"{name}: {r.status:<9} dev {score}" + ("" if r.round == 0 else detail))
    lines += budget_lines(state, cap, width)
    if p := state.promotion:
        name = candidate_name(p.round, p.slot, width)
        lines.append(f"promoted: {name}, {p.snapshot_id[:12]}, dev {p.dev_score:.3f}")
    if t := state.test:
        lines.append(f"sealed test: {t.test_score:.3f} over {t.test_tasks} tasks")
    return lines


def budget_lines(state: State, cap: int, width: int) -> list[str]:
    b = state.budget
    if b is None:
        return []
    spent = state.spent
    given = ", ".join(
        f"{cap_value} {name}"
        for name, cap_value in (("model calls", b.model_calls), ("tokens", b.tokens))
        if cap_value is not None
    )
    lines = [
        f"budget: spent {spent.describe()} over {len(state.samples)} sample(s); "
        f"cap {given or 'none'}, N ≤ {b.samples}"
    ]
    if b.matches is not None:
        matched = sum(b.matched.values(), type(spent)())
        over = {True: "its search was over", False: "its search was NOT over"}
        lines.append(
            f"matched: {b.matches} spent {matched.describe()} "
            f"({over.get(b.matched_search_over, 'state unknown')} when read)"
        )
    if state.promotion is not None or state.test is not None:
        lines.append(f"sampling stopped: {stopped(state, cap, width)}")
    return lines
