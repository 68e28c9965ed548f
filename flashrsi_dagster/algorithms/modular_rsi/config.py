"""ModularRSI's `algorithm` section (seed 001)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from flashrsi_dagster.algorithms.modular_rsi.modules import (
    EXTENSION_MODULES,
    RUNTIME_MODULES,
    missing_files,
    module_problems,
)
from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import (
    MAX_ATTEMPTS,
    MAX_PROMPT_CHARS,
    MAX_STEPS,
    MAX_TASKS,
    AnswerRetries,
    Count,
    RoleConfig,
    WorkerRoleConfig,
)

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
    answer_retries: AnswerRetries = 2
    activation_gate: bool = Field(
        False,
        description="After the execution gate, require the change to have run on that task: "
        "a changed statement of each changed Python file executed, each other changed file "
        "read, as the framework's side of the target saw it (MiniAgent; other adapters "
        "report nothing and pass, saying so). False (seed 001): not checked; the official "
        "code requires the changed variant to be selected and traced.",
    )
    gate_repairs: Count = Field(
        0,
        ge=0,
        le=MAX_ATTEMPTS,
        description="Repairs of a candidate the compile or review gate turned down: the "
        "Worker is told the finding and edits the candidate, and the gates run again. 0 "
        "(seed 001): a rejected candidate keeps the previous version; the official code "
        "allows 2.",
    )
    worker: WorkerRoleConfig = Field(
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
