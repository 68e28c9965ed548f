"""ModularRSI's records as markdown tables: findings, gate verdicts, the success memory and
the steps of an experiment (its branch grid)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flashrsi_dagster.algorithms.modular_rsi.plan import State
from flashrsi_dagster.algorithms.modular_rsi.records import FindingsRecord, Gate
from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.views.figures import score_text
from flashrsi_dagster.views.markup import markdown_table as _table
from flashrsi_dagster.views.markup import table_cell

CELL = 160
"""Characters of free text shown per table cell (the records hold it whole)."""


def _cell(text: object) -> str:
    return table_cell(str(text), CELL)


def findings_markdown(record: FindingsRecord) -> str:
    if not record.findings:
        return "_no findings: nothing to change_"
    rows = [
        (f.file, ", ".join(f.tasks), f.reason, f.change, "yes" if f.file in record.targets else "")
        for f in record.findings
    ]
    table = _table(("file", "supporting tasks", "reason", "change", "edited"), rows)
    if record.batch_error:
        table = f"**The batch failed as a whole:** {_cell(record.batch_error)}\n\n" + table
    return table


def gates_markdown(gates: Iterable[Gate]) -> str:
    rows = [(g.name, "pass" if g.passed else "**fail**", g.reason) for g in gates]
    return _table(("gate", "verdict", "reason"), rows) if rows else "_no candidate was gated_"


def memory_markdown(memory: Mapping[str, Trajectory]) -> str:
    if not memory:
        return "_no success remembered yet_"
    rows = [(task, t.snapshot_id[:12], score_text(t.score)) for task, t in sorted(memory.items())]
    return _table(("task", "version", "score"), rows)


def steps_markdown(state: State, slots: tuple[str, ...] | None = None) -> str:
    """Every step so far (of `slots`, if given): slot, round, outcome, version, reason."""
    records = sorted(state.steps.values(), key=lambda r: (r.created.isoformat(), r.round))
    rows = [
        (
            r.slot,
            r.round,
            r.status,
            r.current_id[:12],
            score_text(r.check.score) if r.check else "",
            r.reason,
        )
        for r in records
        if slots is None or r.slot in slots
    ]
    if not rows:
        return "_no step yet_"
    return _table(("candidate", "round", "outcome", "version", "full check", "reason"), rows)
