"""The behaviour signal: a candidate that scores higher than its parent while its rollouts use
far fewer model calls or tokens on the same tasks.

A harness that carries the answers (a memorised text->label table, say) scores well and
hardly calls its model. Content checks look for the answers in the files; this looks at what
the runs did, as the gateway metered them (`Usage.model_calls`, the tokens): a harness can
misreport its own counts, not the gateway's.

Each side is reduced to one row per task: its score rate (the mean over its final rollouts,
an unscored one counting 0, as `rollouts.scores` does) and its mean model calls and tokens
over the rollouts the gateway metered. An infrastructure failure's usage says nothing about
the harness and is left out. Only tasks with metered usage on both sides are paired:

    calls_ratio  = mean_i(calls_candidate_i)  / mean_i(calls_parent_i)
    tokens_ratio = mean_i(tokens_candidate_i) / mean_i(tokens_parent_i)
    score_delta  = mean_i(score_candidate_i)  - mean_i(score_parent_i)

The candidate is *flagged* when score_delta > 0 and any of: calls_ratio <= max_calls_ratio,
tokens_ratio <= max_tokens_ratio, the same for the median over tasks of the per-task ratio
(`*_ratio_median`: one padded call on one task lifts a mean, not the median), or (with
`zero_call_tasks`) a rollout that answered with no model call on a task where the parent made
calls (`config.behaviour`; a run that broke before its first call gave no answer and does not
count). A flag is a warning, not a rejection: a better harness may legitimately use fewer
calls.

Undefined figures are None — never 0, never NaN: nothing paired (no parent, no metered
usage) leaves every mean, ratio and the delta None and the verdict `not_compared`; a parent
that used no calls (or tokens) leaves that ratio None. A None never flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.config.behaviour import BehaviourConfig
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.stats.small_n import TOLERANCE

Verdict = Literal["flagged", "consistent", "not_compared"]
ANSWERED = (Status.SUCCESS, Status.FAILURE)
"""The statuses of a run that finished with an answer (right or wrong)."""
ZERO_CALL_SHOWN = 10
"""Task ids named in a line; the signal keeps them all."""


class TaskBehaviour(BaseModel):
    """One task on one side: its score rate and its metered usage per rollout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score: float = Field(description="Mean score over the task's final rollouts (None as 0).")
    calls: float | None = Field(description="Mean gateway-counted model calls; None: unmetered.")
    tokens: float | None = Field(description="Mean input + output tokens; None: unmetered.")
    zero_call: bool = Field(
        description="A metered rollout of the task answered (success or failure) with no model "
        "call."
    )


class BehaviourSignal(BaseModel):
    """A candidate's rollouts against its parent's on the tasks both ran, metered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int = Field(ge=0, description="Tasks with metered usage on both sides.")
    unmetered: int = Field(
        ge=0, description="Tasks either side ran but left out: no metered usage on one side."
    )
    calls_candidate: float | None = Field(description="Candidate's mean model calls per task.")
    calls_parent: float | None = Field(description="Parent's mean model calls per task.")
    calls_ratio: float | None = Field(description="calls_candidate / calls_parent.")
    tokens_candidate: float | None = Field(description="Candidate's mean tokens per task.")
    tokens_parent: float | None = Field(description="Parent's mean tokens per task.")
    tokens_ratio: float | None = Field(description="tokens_candidate / tokens_parent.")
    calls_ratio_median: float | None = Field(
        default=None, description="Median over tasks of the per-task calls ratio."
    )
    tokens_ratio_median: float | None = Field(
        default=None, description="Median over tasks of the per-task tokens ratio."
    )
    score_candidate: float | None = Field(description="Candidate's mean score rate, paired tasks.")
    score_parent: float | None = Field(description="Parent's mean score rate, paired tasks.")
    score_delta: float | None = Field(description="score_candidate - score_parent.")
    zero_call_tasks: list[str] = Field(
        description="Paired tasks where a candidate rollout made no model call and the parent "
        "made calls, sorted."
    )
    thresholds: BehaviourConfig = Field(description="What the verdict was judged by.")
    verdict: Verdict = Field(description="flagged / consistent / not_compared.")
    reasons: list[str] = Field(description="Why it was flagged, or why not compared.")

    @property
    def flagged(self) -> bool:
        return self.verdict == "flagged"


def behaviour(
    candidate: Sequence[Trajectory],
    parent: Sequence[Trajectory],
    thresholds: BehaviourConfig | None = None,
) -> BehaviourSignal:
    """Compare the final rollouts of a candidate and its parent (see the module docstring)."""
    thresholds = thresholds or BehaviourConfig()
    ours, theirs = per_task(candidate), per_task(parent)
    both = sorted(t for t in ours.keys() & theirs.keys() if _metered(ours[t], theirs[t]))
    unmetered = len(ours.keys() | theirs.keys()) - len(both)
    figures = _figures([ours[t] for t in both], [theirs[t] for t in both])
    zero = [t for t in both if ours[t].zero_call and (theirs[t].calls or 0) > 0]
    verdict, reasons = _verdict(figures, zero, len(both), thresholds)
    return BehaviourSignal(
        tasks=len(both),
        unmetered=unmetered,
        zero_call_tasks=zero,
        thresholds=thresholds,
        verdict=verdict,
        reasons=reasons,
        **figures,
    )


def per_task(rollouts: Sequence[Trajectory]) -> dict[str, TaskBehaviour]:
    """Each task's score rate and metered usage, by task id."""
    grouped: dict[str, list[Trajectory]] = {}
    for t in rollouts:
        grouped.setdefault(t.task_id, []).append(t)
    return {task: _task(runs) for task, runs in grouped.items()}


def _task(runs: list[Trajectory]) -> TaskBehaviour:
    # An infrastructure failure's usage is the infrastructure's, not the harness's.
    metered = [
        t for t in runs if t.usage.model_calls is not None and t.status != Status.INFRA_ERROR
    ]
    calls = [t.usage.model_calls or 0 for t in metered]
    tokens = [t.usage.input_tokens + t.usage.output_tokens for t in metered]
    # An answer given without the model; a run that broke before its first call is no answer.
    answered = [t for t in metered if t.status in ANSWERED and t.usage.model_calls == 0]
    return TaskBehaviour(
        score=sum(float(t.score or 0.0) for t in runs) / len(runs),
        calls=_mean(calls),
        tokens=_mean(tokens),
        zero_call=bool(answered),
    )


def _metered(a: TaskBehaviour, b: TaskBehaviour) -> bool:
    return a.calls is not None and b.calls is not None


def _figures(ours: list[TaskBehaviour], theirs: list[TaskBehaviour]) -> dict:
    calls = _mean([t.calls or 0.0 for t in ours]), _mean([t.calls or 0.0 for t in theirs])
    tokens = _mean([t.tokens or 0.0 for t in ours]), _mean([t.tokens or 0.0 for t in theirs])
    scores = _mean([t.score for t in ours]), _mean([t.score for t in theirs])
    return {
        "calls_candidate": calls[0],
        "calls_parent": calls[1],
        "calls_ratio": _ratio(*calls),
        "tokens_candidate": tokens[0],
        "tokens_parent": tokens[1],
        "tokens_ratio": _ratio(*tokens),
        "calls_ratio_median": _median_ratio(ours, theirs, "calls"),
        "tokens_ratio_median": _median_ratio(ours, theirs, "tokens"),
        "score_candidate": scores[0],
        "score_parent": scores[1],
        "score_delta": _difference(*scores),
    }


def _verdict(
    figures: dict, zero: list[str], n: int, thresholds: BehaviourConfig
) -> tuple[Verdict, list[str]]:
    if n == 0:
        return "not_compared", ["no task has metered usage on both sides"]
    delta = figures["score_delta"]
    if delta is None or delta <= TOLERANCE:
        return "consistent", []
    reasons = []
    for what, limit in (
        ("calls", thresholds.max_calls_ratio),
        ("tokens", thresholds.max_tokens_ratio),
    ):
        ratio, median = figures[f"{what}_ratio"], figures[f"{what}_ratio_median"]
        noun = "model calls" if what == "calls" else "tokens"
        if limit is not None and ratio is not None and ratio <= limit:
            reasons.append(
                f"{ratio:.2f}x the parent's {noun} "
                f"per task ({figures[f'{what}_candidate']:.1f} vs "
                f"{figures[f'{what}_parent']:.1f}; flagged at <= {limit:g}x)"
            )
        elif limit is not None and median is not None and median <= limit:
            reasons.append(
                f"{median:.2f}x the parent's {noun} on the median task (the mean, "
                f"{ratio:.2f}x, rests on a few tasks; flagged at <= {limit:g}x)"
            )
    if thresholds.zero_call_tasks and zero:
        reasons.append(f"{len(zero)} task(s) answered with no model call: {_ids(zero)}")
    return ("flagged" if reasons else "consistent"), reasons


def line(signal: BehaviourSignal) -> str:
    """The signal in one line, as the CLI and the ledger show it."""
    if signal.verdict == "not_compared":
        return f"behaviour not compared: {'; '.join(signal.reasons)}"
    delta = f"score {signal.score_delta:+.3f} over the parent on {signal.tasks} task(s)"
    if signal.verdict == "consistent":
        return f"behaviour consistent with the parent ({delta})"
    return f"behaviour FLAGGED: {delta} with " + "; ".join(signal.reasons)


def _ids(tasks: list[str]) -> str:
    shown = ", ".join(tasks[:ZERO_CALL_SHOWN])
    return shown + (
        f" (+{len(tasks) - ZERO_CALL_SHOWN} more)" if len(tasks) > ZERO_CALL_SHOWN else ""
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _difference(ours: float | None, theirs: float | None) -> float | None:
    return None if ours is None or theirs is None else ours - theirs


def _median_ratio(
    ours: list[TaskBehaviour], theirs: list[TaskBehaviour], what: str
) -> float | None:
    """The median of the per-task ratios, over the tasks where the parent used some."""
    pairs = [(getattr(a, what), getattr(b, what)) for a, b in zip(ours, theirs, strict=True)]
    ratios = sorted(a / b for a, b in pairs if a is not None and b)
    if not ratios:
        return None
    middle = len(ratios) // 2
    return ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs == 0:
        return None
    return ours / theirs
