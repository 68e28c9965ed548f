"""Meta-Harness's `algorithm` section (seed 000)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import MAX_STEPS, Count, ExistingDir, WorkerRoleConfig
from flashrsi_dagster.snapshots.components import COMPONENTS_FILE

MAX_CANDIDATES = 64
"""Candidate slots of a Meta-Harness round: each is a partition of every round and a history
view of its own, so the grid and the views stay a small multiple of the rounds."""


def _declares_components(folder: Path) -> Path:
    if not (folder / COMPONENTS_FILE).is_file():
        raise ValueError(f"harness folder has no {COMPONENTS_FILE}: {folder}")
    return folder


HarnessDir = Annotated[ExistingDir, AfterValidator(_declares_components)]


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
    proposer: Literal["independent", "coordinated"] = Field(
        "independent",
        description="`independent` (the seed's): each candidate of a round is a Worker session "
        "of its own that never sees its siblings. `coordinated` (the paper's): one Worker "
        "session a round writes all `candidates_per_round` candidates, one folder each, "
        "deliberately different; the host commits and evaluates each folder on its own and "
        "rejects one left unchanged or identical to a sibling.",
    )
    initial_harnesses: list[HarnessDir] = Field(
        default_factory=list,
        max_length=MAX_CANDIDATES - 1,
        description="Harness folders (each with its components.yaml, run by the target's "
        "adapter) evaluated on dev in round 0 beside the target's own harness (the seed, "
        "slot c0), as slots c1, c2, … (the paper starts from several baselines). Every one "
        "is in the Worker's history; the best on dev is the checkout each candidate is "
        "written in. Empty (the seed's): one initial harness.",
    )
    sealed_test_frontier: bool = Field(
        False,
        description="After the promoted snapshot's sealed test, test every other member of "
        "the dev score x context tokens Pareto frontier (frozen with the promotion) once "
        "each, as the paper's reference does; recorded as frontier tests, never a "
        "selection. False (the seed's): the promoted snapshot alone.",
    )
    worker: WorkerRoleConfig = Field(description="The Worker agent; it must have file tools.")
