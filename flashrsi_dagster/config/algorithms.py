"""The `algorithm` section: one config per algorithm, told apart by `name`. Each declares its
parameters and its own agent roles (the Worker, a reviewer, …) besides the target."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from flashrsi_dagster.config.models import (
    MAX_ATTEMPTS,
    MAX_PROMPT_CHARS,
    MAX_STEPS,
    MAX_TASKS,
    Count,
    RoleConfig,
    Section,
)
from flashrsi_dagster.config.modules import (
    EXTENSION_MODULES,
    RUNTIME_MODULES,
    missing_files,
    module_problems,
)


class AlgorithmSection(Section):
    """What every algorithm's config has: a name and its roles."""

    EDITING_ROLES: ClassVar[frozenset[str]] = frozenset({"worker"})
    """Roles that edit harness files: their adapter must have file tools."""
    REQUIRED_SPLITS: ClassVar[tuple[str, ...]] = ("dev", "test")
    """Splits that must not be empty: selection is on dev, the sealed test scores the
    promoted snapshot (an empty one has no score, found only at the very end)."""

    def roles(self) -> dict[str, RoleConfig]:
        """The algorithm's agent roles by name (the target is the experiment's `agent`); an
        optional role left out of the config is not one."""
        return {
            name: value
            for name in type(self).model_fields
            if isinstance(value := getattr(self, name), RoleConfig)
        }

    def split_problems(self, sizes: Mapping[str, int]) -> list[str]:
        """What the algorithm's settings ask of the drawn splits (`sizes`: tasks in train,
        dev and test) that they cannot give, one line each."""
        return []

    def seed_problems(self, harness: Path, declared: Callable[[str], bool]) -> list[str]:
        """What the algorithm's settings need of the seed harness (the target's folder;
        `declared(path)`: its components declare the file) that is not there, one line each."""
        return []

    def parameters(self) -> dict[str, object]:
        """The algorithm's settings other than its name and roles, for one-line summaries."""
        roles = {
            name
            for name, field in type(self).model_fields.items()
            if RoleConfig in (field.annotation, *getattr(field.annotation, "__args__", ()))
        }
        return self.model_dump(exclude={"name", *roles})


MAX_CANDIDATES = 64
"""Candidate slots of a Meta-Harness round: each is a partition of every round and a history
view of its own, so the grid and the views stay a small multiple of the rounds."""


class MetaHarnessConfig(AlgorithmSection):
    name: Literal["meta_harness"]
    max_steps: Count = Field(
        20,
        ge=1,
        le=MAX_STEPS,
        description="Rounds after the seed round (each one Worker edit per candidate slot).",
    )
    candidates_per_round: Count = Field(
        1,
        ge=1,
        le=MAX_CANDIDATES,
        description="Candidates of each round after the seed round, each a Worker edit and "
        "its dev evaluation, all proposed from the history of the rounds before; they may run "
        "side by side.",
    )
    worker: RoleConfig = Field(description="The Worker agent; it must have file tools.")


MIN_PROMPT_BUDGET = 2_000
"""Characters: below this not even a small batch's summary skeleton (ids, groups, counts,
statuses, scores) fits, and every analysis would fail."""


class ModularRSIConfig(AlgorithmSection):
    """ModularRSI (seed 001): each module evolves on its own branch from the same seed on the
    train split (the evolution data), then the Worker integrates the branches; dev takes no
    part, the test split is scored once after promotion."""

    REQUIRED_SPLITS: ClassVar[tuple[str, ...]] = ("train", "test")
    """Train is the evolution data; dev takes no part in evolution or selection."""

    name: Literal["modular_rsi"]
    modules: dict[str, list[str]] = Field(
        description=(
            "Exactly the five runtime modules ("
            + ", ".join(RUNTIME_MODULES)
            + ") or exactly the three extension modules ("
            + ", ".join(EXTENSION_MODULES)
            + "), each mapped to a non-empty list of exact file paths of the target's "
            "harness (relative, `/`-separated; modules may share a file). A branch may "
            "change only its module's files."
        )
    )
    epochs: Count = Field(
        1, ge=1, le=MAX_STEPS, description="Passes over the (seeded, shuffled) train split."
    )
    batch_size: Count = Field(
        4, ge=1, le=MAX_TASKS, description="Train tasks per batch; one edit per batch."
    )
    num_rollouts: Count = Field(
        2, ge=1, le=MAX_ATTEMPTS, description="Rollouts of each batch task per branch version."
    )
    edit_budget: Count = Field(
        3,
        ge=1,
        le=MAX_STEPS,
        description="Files (ranked by distinct supporting tasks) the one edit per batch targets.",
    )
    prompt_budget: Count = Field(
        60_000,
        ge=MIN_PROMPT_BUDGET,
        le=MAX_PROMPT_CHARS,
        description="Characters of trajectory summary in one analysis prompt; over it, texts "
        "are cut evenly (the whole trajectories stay readable as files).",
    )
    integration_rounds: Count = Field(
        2,
        ge=0,
        le=MAX_STEPS,
        description="Repair / re-diagnosis edits of the merged version after the merge; "
        "0: the merge alone, then the final full check.",
    )
    worker: RoleConfig = Field(
        description="The Worker agent: analyses, edits and merges; it must have file tools. "
        "It may be another agent type on another model than the target."
    )
    review_by: Literal["worker", "reviewer"] = Field(
        "worker", description="Which role reviews every candidate's full diff."
    )
    reviewer: RoleConfig | None = Field(
        None,
        validate_default=True,  # `review_by: reviewer` needs it even when it is left out
        description="The agent that reviews every candidate's full diff when `review_by: "
        "reviewer`; it needs no file tools. Only with `review_by: reviewer`.",
    )

    def parameters(self) -> dict[str, object]:
        """The settings, with the modules by name (their files are in the config)."""
        return {**super().parameters(), "modules": "/".join(self.modules)}

    @field_validator("modules")
    @classmethod
    def _module_set(cls, modules: dict[str, list[str]]) -> dict[str, list[str]]:
        problems = module_problems(modules)
        if problems:
            # One error for the key: each line already names its module and entry.
            raise ValueError("; ".join(_under_modules(p) for p in problems))
        return modules

    @field_validator("reviewer")
    @classmethod
    def _reviewer_reviews(cls, value: RoleConfig | None, info: ValidationInfo) -> RoleConfig | None:
        # `review_by` is declared before `reviewer`, so it is validated first (absent if it
        # failed: its own error is reported).
        review_by = info.data.get("review_by")
        if review_by == "reviewer" and value is None:
            raise ValueError(
                "required with review_by: reviewer; add a reviewer section (type, llm, …) "
                "or set review_by: worker"
            )
        if review_by == "worker" and value is not None:
            raise ValueError(
                "never used: review_by is worker (the default), so the worker reviews; set "
                "algorithm.review_by: reviewer, or remove this section"
            )
        return value

    def seed_problems(self, harness: Path, declared: Callable[[str], bool]) -> list[str]:
        """Every module file must be a regular file of the target's harness, declared by its
        components (only declared files enter the seed snapshot)."""
        problems = missing_files(self.modules, harness)
        for name, files in self.modules.items():
            problems += [
                f"algorithm.modules.{name}[{i}]: {entry} is not declared by the harness's "
                f"components ({harness}/components.yaml), so it is not in the seed snapshot"
                for i, entry in enumerate(files)
                if (harness / entry).is_file() and not declared(entry)
            ]
        return problems


def _under_modules(problem: str) -> str:
    """`algorithm.modules.tool_use: [0] …` as said under the key: `tool_use: [0] …`."""
    return problem.removeprefix("algorithm.modules").removeprefix(".").removeprefix(": ")


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
    worker: RoleConfig = Field(
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


AlgorithmConfig = Annotated[
    MetaHarnessConfig | ModularRSIConfig | EvolverConfig, Field(discriminator="name")
]
"""The `algorithm` section: the member whose `name` the config gives."""
