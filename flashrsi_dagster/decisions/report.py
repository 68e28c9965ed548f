"""The ledger in words: a few lines for the CLI, a table and figures for the summary asset."""

from __future__ import annotations

from typing import Any

from flashrsi_dagster.decisions.compare import comparison_table
from flashrsi_dagster.decisions.ledger import Decision, Ledger
from flashrsi_dagster.stats.behaviour import BehaviourSignal, line


def ledger_lines(ledger: Ledger) -> list[str]:
    entries = ledger.entries()
    if not entries:
        return []
    counts = {k: sum(e.decision == k for e in entries) for k in ("adopt", "reject", "rollback")}
    lines = [
        f"decisions: {counts['adopt']} adopted, {counts['reject']} rejected, "
        f"{counts['rollback']} roll-back(s) (records/ledger.jsonl)"
    ]
    baseline = ledger.baseline()
    if baseline is not None:
        lines.append(f"baseline for later runs: {_baseline(baseline)}")
    return lines + flagged_lines(entries)


def flagged_lines(entries: list[Decision]) -> list[str]:
    """A line per candidate whose behaviour was flagged (once, however many entries name it):
    a warning beside the decision, which it did not change."""
    lines, seen = [], set()
    for e in entries:
        signal = e.evidence.behaviour
        if not signal or signal.get("verdict") != "flagged":
            continue
        name = f"{e.candidate.round}/{e.candidate.slot}/{e.candidate.snapshot_id}"
        if name in seen:
            continue
        seen.add(name)
        sid = (e.candidate.snapshot_id or "-")[:12]
        described = line(BehaviourSignal.model_validate(signal))
        lines.append(f"WARNING {e.id} ({sid}, {e.decision}): {described}")
    return lines


def ledger_figures(ledger: Ledger, rule: str) -> dict[str, Any]:
    """Plain values and markdown (keys ending `_md`) for the summary asset's metadata."""
    entries = ledger.entries()
    figures: dict[str, Any] = {
        "trade_off_rule": rule,
        "decision_count": len(entries),
        "decisions_md": decisions_table(entries),
    }
    flags = flagged_lines(entries)
    if flags:
        figures["behaviour_flags_md"] = "".join(f"- {flag}\n" for flag in flags)
    baseline = ledger.baseline()
    if baseline is not None:
        figures["baseline"] = _baseline(baseline)
        # the comparison that made the current baseline: none when a roll-back restored it
        adopted = baseline if baseline.decision == "adopt" else None
        if adopted is not None and adopted.evidence.comparison is not None:
            comparison = adopted.evidence.comparison
            figures["comparison_verdict"] = comparison.verdict
            figures["comparison_md"] = comparison_table(comparison)
    return figures


def _baseline(entry: Decision) -> str:
    sid = (entry.candidate.snapshot_id or "")[:12]
    return f"{sid} ({entry.decision}, {entry.id})"


def decisions_table(entries: list[Decision]) -> str:
    """The entries as a markdown table: id, decision, scope, snapshot, eval set, reason."""
    if not entries:
        return "_no decisions yet_\n"
    rows = ["| entry | decision | scope | snapshot | eval set | reason |", "|---" * 6 + "|"]
    for e in entries:
        reason = e.reason.replace("|", "\\|").replace("\n", " ")
        reason = reason if len(reason) <= 160 else reason[:157] + "..."
        sid = (e.candidate.snapshot_id or "-")[:12]
        rows.append(
            f"| {e.id} | {e.decision} | {e.scope} | {sid} | {e.eval_set or '-'} | {reason} |"
        )
    return "\n".join(rows) + "\n"
