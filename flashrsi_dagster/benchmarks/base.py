"""Benchmarks: tasks with unique ids, and how one task is run and scored.

A benchmark's contract, in the spirit of GEPA's adapter: one task's failure is data (a
trajectory with status and score 0), only systemic faults raise.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.records import Trajectory

if TYPE_CHECKING:
    from flashrsi_dagster.agents.base import Agent
    from flashrsi_dagster.config.models import BenchmarkConfig


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


SecretKind = Literal["input", "answer", "reference"]


@dataclass(frozen=True)
class Secret:
    """One thing a harness must not contain about a task (`contamination` searches for it).

    `input`: what the agent is given (a text to classify, an instruction, an issue);
    searched whole, in long fragments and as digests. `answer`: a short expected answer (a
    label): never evidence alone, only beside its own task's input. `reference`: a reference
    solution, a test file, an expected output, a gold or test patch: searched in long
    fragments."""

    kind: SecretKind
    name: str
    """Which of the task's secrets (`text`, `label`, `solution/solve.sh`, `gold patch`)."""
    text: str


def task_secrets(task: Task) -> list[Secret]:
    """The default for a benchmark without its own `secrets`: the instruction as the input,
    each text of the verifier's data as an answer (short) or a reference (long)."""
    found = [Secret("input", "instruction", task.instruction)]
    for key, value in sorted(task.verifier.items()):
        if isinstance(value, str) and value.strip():
            kind = "answer" if len(value) < 48 else "reference"
            found.append(Secret(kind, key, value))
    return found


@runtime_checkable
class Benchmark(Protocol):
    """What the engine asks of a benchmark. `loading` builds one from the config's `benchmark`
    section (`from_config`) and draws the splits from its tasks (`tasks`, `tasks_from`,
    `default_split_counts`, `name`); the rollout engine calls `rollout`, concurrently, once per
    (task, attempt) until the result is final.

    Errors: bad data or splits raise `BenchmarkError` naming the file, key or task ids; a
    fault no rerun can fix raises `SystemicFault` from `rollout` and stops the evaluation; any
    other exception from `rollout` is recorded as that rollout's infrastructure failure and
    rerun by the engine's ladder (then scored 0, never dropped)."""

    name: str
    """The registry name (`benchmark.name`); names the task pool in split errors."""

    solved_with_tools: bool
    """Whether a task is solved by running commands or editing files (Harbor's, SWE-bench's),
    not answered in text: a target allowed no tool call could do nothing (`validate` refuses
    it)."""

    default_split_counts: Mapping[str, int] | None
    """Train / dev / test sizes used when the config gives no `split_counts`; None when no
    default fits, so the config (or the tasks' `metadata["split"]`) must say."""

    @classmethod
    def from_config(cls, config: BenchmarkConfig) -> Self:
        """The benchmark the config's `benchmark` section describes."""
        ...

    def tasks(self) -> list[Task]:
        """The whole task pool, ids unique; a task may carry `metadata["split"]` to fix its
        split."""
        ...

    def tasks_from(self, path: Path) -> list[Task]:
        """Tasks from another file or folder in this benchmark's format
        (`benchmark.evolution_data_path`), to replace the train split."""
        ...

    def rollout(self, agent: Agent, task: Task, *, split: str, attempt: int) -> Trajectory:
        """Run `agent` on `task` and score it into the trajectory (status, score). The
        agent's own failures (a wrong answer, a timeout) are data: a trajectory, never an
        exception. Called from several threads at once."""
        ...

    def adapter_problem(self, adapter: type[Agent]) -> str | None:
        """Why agents of this adapter class cannot run this benchmark's tasks, or None.
        Asked before a run: such a target would turn every rollout into an error."""
        ...

    def secrets(self, task: Task) -> list[Secret]:
        """What a harness must not contain about `task`: its inputs, answers and reference
        material (`Secret`), searched for in every candidate by the contamination check
        (`flashrsi_dagster.contamination`). `task_secrets(task)` is the generic answer."""
        ...
