"""DGM's `algorithm` section (seed 003, the Darwin Gödel Machine): the archive's parent
selection, the self-modification, the staged evaluation and the paper's two ablations. The
defaults are the official code's (`jennyzzt/dgm`, `DGM_outer.py` and `self_improve_step.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field, model_validator

from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import MAX_STEPS, Count, RoleConfig, Section

MAX_CHILDREN = 16
"""Children of one generation: each a candidate slot of every round's partitions."""

SelectionMode = Literal["score_child_prop", "score_prop", "random", "best"]


class ParentSelection(Section):
    """How each generation's parents are drawn from the archive (`selection.py`)."""

    mode: SelectionMode = Field(
        "score_child_prop",
        description="`score_child_prop` (the paper's): weight sigmoid(score) x 1/(1 + "
        "children); `score_prop`: sigmoid(score) alone; `random`: uniform; `best`: the "
        "highest scores, no draw.",
    )
    slope: float = Field(10.0, gt=0, description="The sigmoid's steepness (the paper's 10).")
    midpoint: float = Field(
        0.5, ge=0, le=1, description="The score the sigmoid maps to 1/2 (the paper's 0.5)."
    )


class StagedEvaluation(Section):
    """A child is scored on a small train subset first, on the rest of train only when that
    first score reaches the threshold (the official code's `test_more_threshold`)."""

    first_tasks: Count = Field(
        10,
        ge=1,
        le=100_000,
        description="Train tasks of the first stage (the paper's small subset has 10); the "
        "first tasks of the drawn train split, the same for every child.",
    )
    threshold: float = Field(
        0.4, ge=0, le=1, description="First-stage score a child needs for the rest of train."
    )


class DgmConfig(AlgorithmSection):
    name: Literal["dgm"]
    REQUIRED_SPLITS = ("train", "dev", "test")

    generations: Count = Field(
        80, ge=1, le=MAX_STEPS, description="Generations after the seed's (the paper's 80)."
    )
    children_per_generation: Count = Field(
        2,
        ge=1,
        le=MAX_CHILDREN,
        description="Self-modification attempts a generation (the paper's `selfimprove_size`); "
        "their parents are drawn from the archive as the generation starts.",
    )
    parents: ParentSelection = Field(default_factory=ParentSelection)
    staged: StagedEvaluation = Field(default_factory=StagedEvaluation)
    special_entry_probability: float = Field(
        0.25,
        ge=0,
        le=1,
        description="Chance that an attempt is asked to work on the agent itself (its "
        "workflow, its tools) rather than one of its failed train tasks; the paper draws its "
        "special entries with 0.25 each.",
    )
    self_improvement: bool = Field(
        True,
        description="The parent's own harness makes its child (the paper's DGM). False: the "
        "paper's ablation `no_selfimprove`, a fixed meta-agent (the Worker role) edits.",
    )
    open_ended: bool = Field(
        True,
        description="Parents drawn from the whole archive. False: the paper's ablation "
        "`no_darwin`, every parent is the latest admitted child (the seed at first).",
    )
    dev_candidates: Count | None = Field(
        None,
        ge=1,
        le=MAX_STEPS,
        description="Admitted members evaluated on dev at the end, the best by train score "
        "first; None: every admitted member.",
    )
    test_top_k: Count = Field(
        1,
        ge=1,
        le=MAX_STEPS,
        description="Members given the sealed test, the best by dev first, each once.",
    )
    worker: RoleConfig = Field(
        description="The Worker role: the model, endpoint, caps and permissions every "
        "self-modification runs with (the parent's harness, on the target's adapter); with "
        "`self_improvement: false`, the fixed meta-agent itself."
    )

    @model_validator(mode="after")
    def _top_k_fits(self) -> DgmConfig:
        if self.dev_candidates is not None and self.test_top_k > self.dev_candidates:
            raise ValueError(
                f"test_top_k ({self.test_top_k}) exceeds dev_candidates ({self.dev_candidates}):"
                " only members evaluated on dev can be tested"
            )
        return self

    def split_problems(self, sizes: Mapping[str, int]) -> list[str]:
        train = sizes.get("train", 0)
        if train < self.staged.first_tasks:
            return [
                f"algorithm.staged.first_tasks: {self.staged.first_tasks} first-stage tasks, "
                f"but the train split has {train}"
            ]
        return []
