"""The `comparison` section: the trade-off rule a candidate is judged by against its baseline,
declared before the run (it is part of the config's fingerprint, so it cannot change once the
experiment has run rollouts).

    comparison:
      primary: score              # or success_rate: the figure that must not drop
      min_lift: 0.0               # the primary must change by at least this (absolute)
      guards:                     # what the candidate may cost for it
        tool_calls: {max_increase: 0.2}   # at most +20% tool calls over the same tasks
        cost: {max_increase: 0.5}
        success_rate: {max_decrease: 0.05}
      on_violation: refuse        # or warn: what a candidate that violates the rule may become

The rule judges every comparison the decision ledger records (`decisions.compare`): "meets",
"violates" (naming each broken clause) or "indecisive" (a figure it needs is undefined, such as
the cost of an unpriced model). Each algorithm chooses its candidate by its own selection rule
(seeds 000, 001); the host then vets the adoption (`decisions.adoption`): under `refuse` (the
default) a candidate that violates the rule is not adopted, under `warn` it is, the violation
said in its ledger entry.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from flashrsi_dagster.config.models import Section

RATES = ("score", "success_rate")
"""Higher is better; guarded by an absolute `max_decrease`."""
COSTS = ("tool_calls", "tokens", "cost", "wall_time")
"""Lower is better; guarded by a relative `max_increase` over the baseline's total."""
Metric = Literal["score", "success_rate", "tool_calls", "tokens", "cost", "wall_time"]


class Guard(Section):
    max_increase: float | None = Field(
        None,
        ge=0,
        description="For tool_calls, tokens, cost, wall_time: the largest increase allowed, "
        "as a fraction of the baseline's total over the same tasks (0.2 = +20%).",
    )
    max_decrease: float | None = Field(
        None,
        ge=0,
        le=1,
        description="For score, success_rate: the largest drop allowed, absolute (0.05 = five "
        "points of a rate in [0, 1]).",
    )

    @model_validator(mode="after")
    def _one_limit(self) -> Guard:
        if (self.max_increase is None) == (self.max_decrease is None):
            raise ValueError("a guard takes exactly one of max_increase, max_decrease")
        return self


class ComparisonConfig(Section):
    """The trade-off rule: candidate vs baseline on the same tasks, model settings and budget."""

    primary: Literal["score", "success_rate"] = Field(
        "score",
        description="The figure a candidate is chosen for: the mean score over tasks x "
        "attempts (the algorithms' own), or the share of rollouts that succeeded.",
    )
    min_lift: float = Field(
        0.0,
        ge=-1,
        le=1,
        description="The least change of the primary figure (absolute) the rule accepts; "
        "0: not worse than the baseline.",
    )
    guards: dict[Metric, Guard] = Field(
        default_factory=dict,
        description="Per metric, the worst it may get: `max_increase` (relative) for "
        "tool_calls, tokens, cost, wall_time; `max_decrease` (absolute) for score, "
        "success_rate. Empty: nothing but the primary is judged.",
    )

    on_violation: Literal["refuse", "warn"] = Field(
        "refuse",
        description="What a candidate whose comparison with the baseline violates the rule "
        "may become. `refuse` (the default): it is not adopted; the algorithm's next choice "
        "is vetted in turn, the baseline last, and the refusal is a ledger entry with the "
        "comparison. `warn`: it is adopted, the violation named in the adoption's reason. "
        "An `indecisive` verdict (a figure undefined) or no comparison refuses nothing.",
    )

    @model_validator(mode="after")
    def _limits_fit_metrics(self) -> ComparisonConfig:
        problems = []
        for metric, guard in self.guards.items():
            if metric in RATES and guard.max_decrease is None:
                problems.append(f"guards.{metric}: a rate takes max_decrease (absolute)")
            if metric in COSTS and guard.max_increase is None:
                problems.append(f"guards.{metric}: a cost takes max_increase (relative)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def describe(self) -> str:
        """The rule in one line, as reports name it."""
        clauses = [f"{self.primary} lift >= {self.min_lift:+g}"]
        for metric, guard in self.guards.items():
            if guard.max_increase is not None:
                clauses.append(f"{metric} <= +{guard.max_increase:.0%}")
            else:
                clauses.append(f"{metric} >= -{guard.max_decrease:g}")
        return "; ".join(clauses)
