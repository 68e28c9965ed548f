"""Meta-Harness's `algorithm` section (seed 000)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flashrsi_dagster.config.algorithms import AlgorithmSection
from flashrsi_dagster.config.models import MAX_STEPS, Count, WorkerRoleConfig

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
    proposer: Literal["independent", "coordinated"] = Field(
        "independent",
        description="`independent` (the seed's): each candidate of a round is a Worker session "
        "of its own that never sees its siblings. `coordinated` (the paper's): one Worker "
        "session a round writes all `candidates_per_round` candidates, one folder each, "
        "deliberately different; the host commits and evaluates each folder on its own and "
        "rejects one left unchanged or identical to a sibling.",
    )
    worker: WorkerRoleConfig = Field(description="The Worker agent; it must have file tools.")
