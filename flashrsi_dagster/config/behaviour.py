"""The `behaviour` section: when a candidate's rollouts look too cheap for the score they got.

    behaviour:
      max_calls_ratio: 0.5    # flag at or below half the parent's model calls per task
      max_tokens_ratio: 0.5   # ... or half its tokens per task
      zero_call_tasks: true   # ... or a rollout with no model call where the parent made some

A candidate is flagged when it scores higher than its parent on the same tasks *and* one of
these holds (`stats.behaviour`). A flag is a warning (an asset check, a line in the decision
ledger), never a rejection: a better harness may well need fewer calls. It is part of the
config's fingerprint, as every section is, but left at its defaults it is left out (an
experiment started before the section existed reopens unchanged).
"""

from __future__ import annotations

from pydantic import Field

from flashrsi_dagster.config.models import Section


class BehaviourConfig(Section):
    """The thresholds of the behaviour signal (`stats.behaviour`)."""

    max_calls_ratio: float | None = Field(
        0.5,
        ge=0,
        le=1,
        description="Flag a higher-scoring candidate whose mean model calls per task (the "
        "gateway's count) are at most this share of its parent's on the same tasks; None: "
        "calls are not judged.",
    )
    max_tokens_ratio: float | None = Field(
        0.5,
        ge=0,
        le=1,
        description="The same for tokens (input + output, the gateway's count); None: tokens "
        "are not judged.",
    )
    zero_call_tasks: bool = Field(
        True,
        description="Flag a higher-scoring candidate with a rollout that made no model call "
        "on a task where its parent made calls: a model-driven agent that answered without "
        "its model is suspicious by itself.",
    )
