"""Benchmarks: tasks with unique ids, and how one task is run and scored.

A benchmark's contract, in the spirit of GEPA's adapter: one task's failure is data (a
trajectory with status and score 0), only systemic faults raise.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.records import Trajectory

if TYPE_CHECKING:
    from flashrsi_dagster.agents.base import Agent


class BenchmarkError(ValueError):
    """Bad benchmark data or splits: the message names the file, key or task ids."""


class SystemicFault(RuntimeError):
    """A fault no rerun can fix (a missing engine, an unsupported setup): it stops the
    evaluation instead of being recorded as one task's infrastructure failure."""


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, description="Unique within the benchmark.")
    instruction: str = Field(description="What the agent is asked to do.")
    verifier: dict[str, Any] = Field(
        default_factory=dict,
        description="What scoring needs (e.g. the expected label); never shown to the agent.",
    )
    environment: Path | None = Field(
        None, description="Task folder of a task that runs in an environment (Harbor format)."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def checksum(self) -> str:
        """Content identity: the same instruction and verifier data give the same checksum."""
        blob = json.dumps([self.instruction, self.verifier], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()


class Benchmark(Protocol):
    name: str
    primary_metric: str

    def tasks(self) -> list[Task]:
        """The whole task pool; a task may carry `metadata["split"]` to fix its split."""
        ...

    def rollout(self, agent: Agent, task: Task, *, split: str, attempt: int) -> Trajectory:
        """Run `agent` on `task` and score it. Never raises for the agent's failures."""
        ...
