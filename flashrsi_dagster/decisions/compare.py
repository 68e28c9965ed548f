"""A candidate against its baseline on one fixed task set, metric by metric, judged by the
trade-off rule declared in the config (`config/comparison.py`).

Both sides must hold the final rollouts of exactly the same tasks, the same number of times
(the same budget): anything else is refused (`ComparisonError`), never compared on the overlap.
Every figure divides by the fixed denominator tasks x attempts (a rollout lost to
infrastructure counts as a failure with score 0, as in `rollouts.scores`):

- score: mean score;  success_rate: share of rollouts with status `success`
- tool_calls, tokens (input + output), cost, wall_time (summed rollout durations): totals
- failure modes: rollouts per (status, error class), from `stats.failures.failure_map`

Cost is None when no rollout was priced; a rule that guards an undefined figure is
"indecisive", never met.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.config.comparison import RATES, ComparisonConfig
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.rollouts.scores import scores_frame
from flashrsi_dagster.stats.failures import failure_map

Verdict = Literal["meets", "violates", "indecisive"]
METRICS = ("score", "success_rate", "tool_calls", "tokens", "cost", "wall_time")


class ComparisonError(ValueError):
    """Two rollout lists that are not a comparison: different tasks, or different budgets."""


class Metrics(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int
    attempts: int = Field(description="Rollouts per task (the same for every task).")
    score: float
    success_rate: float
    tool_calls: int
    tokens: int
    input_tokens: int
    output_tokens: int
    cost: float | None = Field(description="None unless every rollout was priced.")
    wall_time: float = Field(description="Seconds, summed over rollouts.")
    failure_modes: dict[str, int] = Field(description="`<status>/<error class>` -> rollouts.")


class Change(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str
    baseline: float | None
    candidate: float | None
    difference: float | None = Field(description="candidate - baseline.")
    relative: float | None = Field(description="difference / baseline; None if baseline is 0.")


class Comparison(BaseModel):
    """What the ledger keeps as evidence: both sides' figures, the changes, the verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str = Field(description="The trade-off rule in words (`ComparisonConfig.describe`).")
    eval_set: str = Field(description="The version of the task set both sides ran.")
    baseline: Metrics
    candidate: Metrics
    changes: list[Change]
    failure_modes: list[tuple[str, int, int]] = Field(
        description="(mode, baseline rollouts, candidate rollouts), every mode of either side."
    )
    verdict: Verdict
    reasons: list[str] = Field(description="Each clause of the rule, and how it came out.")

    def change(self, metric: str) -> Change:
        return next(c for c in self.changes if c.metric == metric)

    def line(self) -> str:
        """One line: the verdict and what decided it."""
        return f"{self.verdict} ({'; '.join(self.reasons)}) [rule: {self.rule}]"


def metrics(trajectories: Sequence[Trajectory]) -> Metrics:
    """The figures of one side (its rollouts must cover each task equally often)."""
    per_task = Counter(t.task_id for t in trajectories)
    attempts = set(per_task.values())
    if len(attempts) > 1:
        raise ComparisonError(f"tasks were run different numbers of times: {sorted(attempts)}")
    frame = scores_frame(trajectories)
    n = len(frame)
    if not n:
        raise ComparisonError("no rollouts to compare")
    modes = failure_map(frame, examples=0)
    return Metrics(
        tasks=len(per_task),
        attempts=attempts.pop(),
        score=math.fsum(frame["score"]) / n,  # exact: the same in any order of the rollouts
        success_rate=float((frame["status"] == str(Status.SUCCESS)).sum() / n),
        tool_calls=int(frame["tool_calls"].sum()),
        tokens=int(frame["input_tokens"].sum() + frame["output_tokens"].sum()),
        input_tokens=int(frame["input_tokens"].sum()),
        output_tokens=int(frame["output_tokens"].sum()),
        # a partly priced side has no total: its unpriced rollouts would count as free
        cost=None if frame["cost"].isna().any() else float(frame["cost"].sum()),
        wall_time=float(frame["duration"].sum()),
        failure_modes={
            f"{row.status}/{row.error_type}": int(row.count)
            for row in modes.itertuples(index=False)
        },
    )


def compare(
    candidate: Sequence[Trajectory],
    baseline: Sequence[Trajectory],
    rule: ComparisonConfig,
    *,
    eval_set: str,
) -> Comparison:
    """The candidate's rollouts against the baseline's on the same tasks and budget."""
    ours, theirs = {t.task_id for t in candidate}, {t.task_id for t in baseline}
    if ours != theirs:
        only = sorted(ours - theirs)[:3], sorted(theirs - ours)[:3]
        raise ComparisonError(
            f"different task sets: {len(ours)} vs {len(theirs)} tasks (only the candidate's: "
            f"{', '.join(only[0]) or '-'}; only the baseline's: {', '.join(only[1]) or '-'})"
        )
    cand, base = metrics(candidate), metrics(baseline)
    if cand.attempts != base.attempts:
        raise ComparisonError(
            f"different budgets: {cand.attempts} vs {base.attempts} rollouts per task"
        )
    changes = [_change(m, getattr(base, m), getattr(cand, m)) for m in METRICS]
    modes = sorted(set(cand.failure_modes) | set(base.failure_modes))
    verdict, reasons = judge(changes, rule)
    return Comparison(
        rule=rule.describe(),
        eval_set=eval_set,
        baseline=base,
        candidate=cand,
        changes=changes,
        failure_modes=[
            (m, base.failure_modes.get(m, 0), cand.failure_modes.get(m, 0)) for m in modes
        ],
        verdict=verdict,
        reasons=reasons,
    )


def judge(changes: Sequence[Change], rule: ComparisonConfig) -> tuple[Verdict, list[str]]:
    """The rule's verdict on the changes: every clause met, one broken, or one undefined."""
    by_metric = {c.metric: c for c in changes}
    primary = by_metric[rule.primary]
    outcomes: list[tuple[bool | None, str]] = []
    lift = primary.difference
    outcomes.append(
        (
            None if lift is None else lift >= rule.min_lift - 1e-12,
            f"{rule.primary} {_figure(primary.baseline)} -> {_figure(primary.candidate)} "
            f"(lift {_figure(lift, signed=True)}, needs >= {rule.min_lift:+g})",
        )
    )
    for metric, guard in rule.guards.items():
        change = by_metric[metric]
        if metric in RATES:
            worse = None if change.difference is None else -change.difference
            limit, shown = guard.max_decrease, _figure(change.difference, signed=True)
        else:
            worse = _relative_increase(change)
            limit = guard.max_increase
            shown = "undefined" if worse is None else f"{worse:+.1%}"
        assert limit is not None
        outcomes.append((None if worse is None else worse <= limit + 1e-12, f"{metric} {shown}"))
    reasons = [
        f"{text}: {'ok' if ok else 'undefined' if ok is None else 'BROKEN'}"
        for ok, text in outcomes
    ]
    if any(ok is False for ok, _ in outcomes):
        return "violates", reasons
    if any(ok is None for ok, _ in outcomes):
        return "indecisive", reasons
    return "meets", reasons


def _change(metric: str, baseline, candidate) -> Change:
    if baseline is None or candidate is None:
        return Change(
            metric=metric, baseline=baseline, candidate=candidate, difference=None, relative=None
        )
    difference = float(candidate) - float(baseline)
    relative = difference / float(baseline) if baseline else None
    return Change(
        metric=metric,
        baseline=float(baseline),
        candidate=float(candidate),
        difference=difference,
        relative=relative,
    )


def _relative_increase(change: Change) -> float | None:
    """How much a cost grew, as a share of the baseline's; from 0, any growth is unbounded."""
    if change.difference is None or change.baseline is None:
        return None
    if change.baseline == 0:
        return 0.0 if change.difference <= 0 else float("inf")
    return change.difference / change.baseline


def _figure(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "undefined"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def comparison_table(comparison: Comparison) -> str:
    """The comparison as a markdown table (the summary asset shows it)."""
    rows = ["| metric | baseline | candidate | change |", "|---|---|---|---|"]
    for c in comparison.changes:
        rel = "" if c.relative is None else f" ({c.relative:+.1%})"
        rows.append(
            f"| {c.metric} | {_figure(c.baseline)} | {_figure(c.candidate)} | "
            f"{_figure(c.difference, signed=True)}{rel} |"
        )
    for mode, before, after in comparison.failure_modes:
        rows.append(f"| failures {mode} | {before} | {after} | {after - before:+d} |")
    rows.append(f"\nRule: {comparison.rule}. Verdict: **{comparison.verdict}**.")
    return "\n".join(rows) + "\n"


__all__ = [
    "Comparison",
    "ComparisonError",
    "Metrics",
    "compare",
    "comparison_table",
    "judge",
    "metrics",
]
