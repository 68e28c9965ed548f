"""STOP in lines: a line per step, the experiment in a few lines with every flagged
circumvention attempt counted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.stop.plan import State
from flashrsi_dagster.algorithms.stop.records import RunRecord
from flashrsi_dagster.records import read_optional

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.stop.run import Stop


def step_line(state: State, step: Step) -> str:
    r = state.round(step.round) if step.round is not None else None
    if r is not None:
        return f"   {_round_line(r)}"
    if state.test is not None and step.action == "sealed_test":
        return f"   sealed test of the promoted improver: {state.test.test_score:.3f}"
    p = state.promotion
    return f"   promoted round {p.round}, dev meta-utility {p.dev_score:.3f}" if p else "   done"


def _round_line(r) -> str:
    if r.status != "evaluated":
        return f"round {r.round}: rejected — {r.reason}"
    line = f"round {r.round}: train meta-utility {r.train_meta_utility:.3f}, dev {r.dev_score:.3f}"
    return line + (
        f" — FLAGGED {r.flagged} attempt(s): {', '.join(r.attempt_kinds)}" if r.flagged else ""
    )


def summary(search: Stop, state: State) -> list[str]:
    lines = [_round_line(r) for r in state.rounds]
    attempts = _attempts(search, state)
    lines.append(
        f"circumvention attempts flagged: {sum(attempts.values())}"
        + (f" ({', '.join(f'{k} {n}' for k, n in sorted(attempts.items()))})" if attempts else "")
    )
    if p := state.promotion:
        lines.append(f"promoted: round {p.round}, {p.snapshot_id[:12]}, dev {p.dev_score:.3f}")
    if t := state.test:
        lines.append(f"sealed test: {t.test_score:.3f} over {t.test_tasks} tasks")
    return lines


def _attempts(search: Stop, state: State) -> dict[str, int]:
    """Every attempt seen: by the rounds' improvers, by the programs the self-improvement
    runs tried, and by those runs themselves (each program counted once)."""
    counted: dict[str, int] = {}
    seen: set[str] = set()
    for r in state.rounds:
        run = read_optional(search.layout.run(r.round), RunRecord)
        digests = [r.digest] if r.digest else []
        if run is not None:
            digests += run.tried
            for a in run.attempts:
                counted[a.kind] = counted.get(a.kind, 0) + 1
        for d in digests:
            if d in seen:
                continue
            seen.add(d)
            record = search.scorer_record(d)
            for a in record.attempts if record else []:
                counted[a.kind] = counted.get(a.kind, 0) + 1
    return counted
