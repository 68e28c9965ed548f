"""The analysis prompt's summary of a batch, within the prompt budget (in characters).

Whole, it shows every sample of every task. Over the budget, each task keeps one
representative success, one failure and its earlier success, and always its id, group, sample
counts and each kept sample's status and score; then the question, output, error and
trajectory texts share what is left evenly (a short text gives its unused share to the
others). If not even that skeleton fits, `BudgetError`. The Worker can read every trajectory
whole, and the memory, as files: only the prompt is cut.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from flashrsi_dagster.agents.run_config import RUN_CONFIG_ROLE
from flashrsi_dagster.algorithms.modular_rsi.groups import TaskGroup
from flashrsi_dagster.records import Trajectory

CUT = "…[{n} characters cut; the whole trajectory is in the folder]"
FIELDS = ("question", "output", "error", "trajectory")


class BudgetError(ValueError):
    """The prompt budget cannot hold even the summary's skeleton."""


@dataclass(frozen=True)
class _Sample:
    label: str  # "success", "failure", "earlier success"
    trajectory: Trajectory

    def texts(self) -> dict[str, str]:
        t = self.trajectory
        error = f"{t.error.type}: {t.error.message}" if t.error else ""
        return {
            "question": _question(t),
            "output": t.answer or "",
            "error": error,
            "trajectory": _transcript(t),
        }

    def head(self) -> str:
        t = self.trajectory
        score = "none" if t.score is None else f"{t.score:.2f}"
        meta = f" · metadata {json.dumps(t.metadata, sort_keys=True)}" if t.metadata else ""
        return f"#### {self.label} · status {t.status} · score {score}{meta}"


def summarize(groups: Sequence[TaskGroup], budget: int) -> str:
    """The batch's summary in at most `budget` characters (see the module docstring)."""
    whole = _render(groups, _all_samples, caps=None)
    if len(whole) <= budget:
        return whole
    skeleton = _render(groups, _representatives, caps={})
    room = budget - len(skeleton)
    if room < 0:
        raise BudgetError(
            f"algorithm.prompt_budget: {budget} characters cannot hold the batch's summary "
            f"even with every text cut ({len(skeleton)} characters for {len(groups)} tasks' "
            "ids, groups, counts, statuses and scores); raise it or lower batch_size"
        )
    texts = [
        text
        for group in groups
        for sample in _representatives(group)
        for text in sample.texts().values()
        if text
    ]
    caps = _even_caps([len(t) for t in texts], room)
    summary = _render(groups, _representatives, caps=caps)
    assert len(summary) <= budget, (len(summary), budget)
    return summary


def _all_samples(group: TaskGroup) -> list[_Sample]:
    samples = [_Sample("success" if t in group.successes else "failure", t) for t in group.samples]
    if group.earlier_success is not None:
        samples.append(_Sample("earlier success", group.earlier_success))
    return samples


def _representatives(group: TaskGroup) -> list[_Sample]:
    kept = []
    if group.successes:
        kept.append(_Sample("success", group.successes[0]))
    if group.failures:
        kept.append(_Sample("failure", group.failures[0]))
    if group.earlier_success is not None:
        kept.append(_Sample("earlier success", group.earlier_success))
    return kept


def _render(groups, pick, caps: dict[int, int] | None) -> str:
    """The summary; `caps` maps a text's length to its cap (None: every text whole; {}: every
    text cut to its marker, the skeleton)."""
    blocks = []
    for group in groups:
        lines = [
            f"### task {group.task_id} · group {group.kind} · "
            f"{len(group.successes)} of {len(group.samples)} sample(s) succeeded · "
            f"{group.aim}"
        ]
        for sample in pick(group):
            lines.append(sample.head())
            for name, text in sample.texts().items():
                if text:
                    lines.append(f"{name}: {_cut(text, caps)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _cut(text: str, caps: dict[int, int] | None) -> str:
    if caps is None:
        return text
    cap = caps.get(len(text), 0)
    if len(text) <= cap:
        return text
    marker = CUT.format(n=len(text) - cap)
    return text[:cap] + marker if cap else marker


def _even_caps(lengths: list[int], room: int) -> dict[int, int]:
    """Water-filling: every text gets the same share of `room`; a text shorter than its share
    stays whole and leaves the rest to the others. Keyed by length (texts of equal length get
    equal caps). `room` is what the skeleton, which already holds a cut marker per text,
    leaves: a marker only shortens as more of its text is kept."""
    remaining = sorted(lengths)
    caps: dict[int, int] = {}
    while remaining:
        share = max(room, 0) // len(remaining)
        length = remaining[0]
        if length > share:
            caps.update({n: share for n in remaining if n not in caps})
            break
        caps[length] = length
        room -= length
        remaining.pop(0)
    return caps


def _question(t: Trajectory) -> str:
    for message in t.messages:
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def _transcript(t: Trajectory) -> str:
    lines = []
    for message in t.messages:
        role = message.get("role", "?")
        if role in ("system", RUN_CONFIG_ROLE):  # the role's settings, not what it did
            continue
        text = _text(message.get("content"))
        calls = message.get("tool_calls") or []
        named = ", ".join(str((c.get("function") or c).get("name", "?")) for c in calls)
        lines.append(f"[{role}] {text}" + (f" (calls {named})" if named else ""))
    return "\n".join(lines)


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return "" if content is None else json.dumps(content)
