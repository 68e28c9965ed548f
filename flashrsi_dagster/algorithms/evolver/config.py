"""The Evolver's `algorithm` section (seed 004)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field

from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import (
    MAX_ATTEMPTS,
    MAX_STEPS,
    MAX_TASKS,
    AnswerRetries,
    Count,
    WorkerRoleConfig,
)


class EvolverConfig(AlgorithmSection):
    """The Evolver SOP (seed 004): a cold start of vanilla on train x K, then rounds of the
    seven-step funnel (diagnose, choose WHYs, prune, apply, screen and confirm, gates, pick the
    parent) on train until patience or the round cap; the test split is unsealed once at the
    end for the retention report. Dev takes no part."""

    REQUIRED_SPLITS: ClassVar[tuple[str, ...]] = ("train", "test")

    name: Literal["evolver"]
    k: Count = Field(
        3, ge=1, le=MAX_ATTEMPTS, description="Runs per task at the cold start and the confirm."
    )
    max_why_per_round: Count = Field(2, ge=1, le=2, description="WHYs a round works on (1-2).")
    candidates_per_why: Count = Field(3, ge=2, le=3, description="Candidates per WHY (2-3).")
    recombinations_per_round: Count = Field(
        1,
        ge=0,
        le=3,
        description="Cross-cell recombination candidates a round adds when the QD archive has "
        "elites in two or more cells (0: none).",
    )
    patience: Count = Field(
        10, ge=1, le=MAX_STEPS, description="Rounds in a row with no candidate beating vanilla."
    )
    max_rounds: Count = Field(20, ge=1, le=MAX_STEPS, description="Rounds after the cold start.")
    max_consecutive_errors: Count = Field(
        3, ge=1, le=MAX_STEPS, description="Errored rounds in a row that stop the run."
    )
    anchor_size: Count = Field(
        8,
        ge=2,
        le=MAX_TASKS,
        description="Train tasks of a WHY's screen (K=1); at most the train split's size.",
    )
    screen_threshold: float = Field(
        1.5, gt=0, le=10, description="Cull at screen below -threshold x sigma_screen."
    )
    credit_sigma: float = Field(
        2.0, gt=0, le=10, description="The paired z at which a candidate is credited (a label)."
    )
    taxonomy: Literal["builtin", "induce"] = Field(
        "builtin",
        description="`builtin`: the benchmark's WHY table (a benchmark without one is induced); "
        "`induce`: two-stage induction from the cold start's failures.",
    )
    zero_hit_preflight: bool = Field(
        False,
        description="Prune, before any run, a candidate whose declared `TRIGGER: <regex>` "
        "matches none of its anchor tasks' instructions.",
    )
    answer_retries: AnswerRetries = 2
    worker: WorkerRoleConfig = Field(
        description="The Worker agent: diagnoses, picks the WHYs and designs candidates; it "
        "must have file tools."
    )

    def split_problems(self, sizes: Mapping[str, int]) -> list[str]:
        """Each WHY's anchor set is drawn from train: a larger one would silently be train."""
        train = sizes["train"]
        if self.anchor_size <= train:
            return []
        return [
            f"algorithm.anchor_size: {self.anchor_size} is more than the {train} tasks of the "
            "train split, from which each WHY's anchor set is drawn; set it to at most "
            f"{train}, or give train more tasks (benchmark.split_counts.train)"
        ]
