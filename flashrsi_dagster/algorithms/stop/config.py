"""STOP's `algorithm` section (Zelikman et al., COLM 2024, Algorithm 1)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import MAX_STEPS, Count, ExistingDir, RoleConfig

SEED_IMPROVER = Path(__file__).with_name("harness")
MAX_GROUPS = 16
MAX_BUDGET = 64


class StopConfig(AlgorithmSection):
    name: Literal["stop"]
    rounds: Count = Field(
        2, ge=1, le=MAX_STEPS, description="Self-improvement rounds (Algorithm 1's T)."
    )
    improver: RoleConfig = Field(
        description="The improver's model, timeout and spend cap (the improver program is "
        "the agent: `type` is not used). Its calls go through the gateway under these caps."
    )
    improver_dir: ExistingDir | None = Field(
        None,
        description="The seed improver's folder (improver.py + components.yaml); None: the "
        "built-in seed improver, which samples and keeps the best by utility.",
    )
    solution_file: str = Field(
        "prompts/system.md",
        description="The target harness file a downstream solution replaces.",
    )
    groups: Count = Field(
        2, ge=1, le=MAX_GROUPS, description="Downstream tasks: groups of train tasks."
    )
    group_size: Count = Field(3, ge=1, le=64, description="Train tasks per downstream task.")
    budget: Count = Field(
        6, ge=1, le=MAX_BUDGET, description="Utility calls of an improver on one downstream task."
    )
    meta_budget: Count = Field(
        3, ge=1, le=MAX_BUDGET, description="Meta-utility calls of an improver improving itself."
    )
    model_calls: Count = Field(
        8, ge=1, le=256, description="Model calls of one improver run (held by the gateway)."
    )

    def split_problems(self, sizes: Mapping[str, int]) -> list[str]:
        need = self.groups * self.group_size
        if sizes.get("train", 0) < need:
            return [
                f"algorithm.groups x algorithm.group_size: {self.groups} downstream tasks of "
                f"{self.group_size} need {need} train tasks, the split has {sizes.get('train', 0)}"
            ]
        return []

    def seed_problems(self, harness: Path, declared: Callable[[str], bool]) -> list[str]:
        if not (harness / self.solution_file).is_file():
            return [f"algorithm.solution_file: {self.solution_file!r} is not a target harness file"]
        if not declared(self.solution_file):
            return [f"algorithm.solution_file: {self.solution_file!r} is not in components.yaml"]
        folder = self.improver_dir or SEED_IMPROVER
        if not (folder / "improver.py").is_file():
            return [f"algorithm.improver_dir: {folder} has no improver.py"]
        return []
