"""Best-of-N's `algorithm` section: how many samples, or the budget they may spend (given, or
matched to a finished experiment of the same home), how many run side by side, and what the
Worker is shown of the seed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import Count, RoleConfig, Section
from flashrsi_dagster.config.names import name_problem

MAX_SAMPLES = 64
"""Samples of one experiment at most: each is a partition of the grid, registered up front."""


class Budget(Section):
    """What the samples' Workers may spend, as seed 003 reads a budget: None is no cap, 0 is
    nothing (only the seed is evaluated), n is a cap. Sampling stops once either is spent."""

    model_calls: Count | None = Field(
        None, ge=0, description="Worker model calls (the gateway's count) over all samples."
    )
    tokens: Count | None = Field(
        None, ge=0, description="Worker tokens (input + output) over all samples."
    )


class BestOfNConfig(AlgorithmSection):
    """Best-of-N: the seed on dev, then independent Worker edits of the seed, each seeing
    the seed and its own evidence only, each evaluated on dev; the best is promoted."""

    name: Literal["best_of_n"]
    samples: Count | None = Field(
        None,
        ge=1,
        le=MAX_SAMPLES,
        description=f"N: Worker edits at most (default {MAX_SAMPLES} when a budget or "
        "`matches` bounds them instead).",
    )
    budget: Budget | None = Field(
        None,
        description="Stop sampling once the Worker has spent this; a key given here "
        "overrides the one `matches` derives.",
    )
    matches: str | None = Field(
        None,
        description="An experiment of the same home whose improvement budget this control "
        "spends: every role's model calls and tokens but the target's, from its gateway log, "
        "fixed when the seed is evaluated.",
    )
    side_by_side: Count = Field(
        1,
        ge=1,
        le=MAX_SAMPLES,
        description="Samples per round, which may run side by side; a new round starts only "
        "while budget is left.",
    )
    shown: Literal["train", "dev"] = Field(
        "train",
        description="The seed's rollouts each Worker reads: on train (the seed is evaluated "
        "there too), or on dev, as Meta-Harness's first Worker sees them.",
    )
    worker: RoleConfig = Field(description="The Worker agent; it must have file tools.")

    @field_validator("matches")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        if value is not None and (problem := name_problem(value)):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _bounded(self) -> BestOfNConfig:
        if self.samples is None and self.budget is None and self.matches is None:
            raise ValueError("give `samples`, a `budget` or the experiment it `matches`")
        return self

    @property
    def cap(self) -> int:
        """The most samples the experiment can take."""
        return self.samples or MAX_SAMPLES

    def split_problems(self, sizes: Mapping[str, int]) -> list[str]:
        if self.shown == "train" and not sizes.get("train"):
            return ["algorithm.shown: train, but the train split is empty: show `dev` instead"]
        return []

    def sibling_problems(self, home: Path) -> list[str]:
        if self.matches is None or (home / self.matches / "run_meta.json").is_file():
            return []
        known = sorted(p.parent.name for p in home.glob("*/run_meta.json")) if home.is_dir() else []
        return [
            f"algorithm.matches: no experiment {self.matches!r} under {home} to match the "
            f"budget of (experiments there: {', '.join(known) or 'none'})"
        ]
