"""From findings to edit targets: the suggestions for one file are merged, and files are
ranked by how many distinct tasks support them; the top `edit_budget` go into one edit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flashrsi_dagster.algorithms.modular_rsi.protocol import Finding


@dataclass(frozen=True)
class Target:
    """One file to change, with every finding on it and the tasks behind them."""

    file: str
    findings: tuple[Finding, ...]

    @property
    def tasks(self) -> tuple[str, ...]:
        """The distinct supporting tasks, in the order the findings cite them."""
        return tuple(dict.fromkeys(t for f in self.findings for t in f.tasks))

    def describe(self) -> str:
        tasks = ", ".join(self.tasks)
        lines = [f"## {self.file} (supported by {len(self.tasks)} task(s): {tasks})"]
        for finding in self.findings:
            lines.append(f"- why: {finding.reason}\n  change: {finding.change}")
            lines.append(f"  tasks: {', '.join(finding.tasks)}")
        return "\n".join(lines)


def rank_targets(findings: Sequence[Finding], edit_budget: int) -> list[Target]:
    """Findings merged per file, most distinct supporting tasks first (a task cited twice for
    the same file counts once; ties keep the order the files were first named), at most
    `edit_budget` of them."""
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(finding.file, []).append(finding)
    targets = [Target(file, tuple(found)) for file, found in by_file.items()]
    order = {t.file: i for i, t in enumerate(targets)}
    targets.sort(key=lambda t: (-len(t.tasks), order[t.file]))
    return targets[:edit_budget]
