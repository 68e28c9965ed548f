"""ModularRSI in words, as the CLI prints it: a line per step, and the whole experiment."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.algorithms.modular_rsi.plan import State
from flashrsi_dagster.algorithms.modular_rsi.records import StepRecord


def _line(record: StepRecord) -> str:
    check = f", full check {record.check.score:.3f}" if record.check else ""
    return f"{record.slot} step {record.round}: {record.status}{check} — {record.reason}"


def step_line(state: State, step: Step) -> str:
    if step.round is not None and step.slot is not None:
        record = state.step(step.slot, step.round)
        return f"   {_line(record)}" if record else f"   {step.describe()}: no result"
    if state.test is not None:
        return f"   sealed test of the promoted version: {state.test.test_score:.3f}"
    if state.promotion is not None:
        return f"   promoted {state.promotion.snapshot_id[:12]} ({state.promotion.source})"
    return "   done"


def summary(state: State) -> list[str]:
    lines = [_line(r) for r in sorted(state.steps.values(), key=_order)]
    if state.promotion:
        p = state.promotion
        lines.append(f"promoted: {p.snapshot_id[:12]} ({p.source}): {p.reason}")
    if state.test:
        lines.append(f"sealed test: {state.test.test_score:.3f} over {state.test.test_tasks} tasks")
    if state.aborted:
        lines.append(f"aborted: {state.aborted.reason} (every record is kept)")
    lines += _improvers(state)
    return lines


def _improvers(state: State) -> list[str]:
    """Under `worker.harness: adopted`, who made the steps' edits (the step's own start)."""
    made = [r for r in state.steps.values() if r.produced_by]
    if not made:
        return []
    failed = state.failed_improvers()
    line = (
        f"improver: adopted — {len(made)} step(s) analysed and edited by the version they "
        f"started from"
    )
    if failed:
        names = ", ".join(sorted(sid[:12] for sid in failed))
        line += f"; {len(failed)} version(s) failed as the Worker and edit no more ({names})"
    return [line]


def _order(record: StepRecord) -> tuple[str, int]:
    """The order the steps ran in (branches one after another, then the integration)."""
    return (record.created.isoformat(), record.round)
