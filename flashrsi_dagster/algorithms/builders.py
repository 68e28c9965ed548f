"""What an algorithm builds its agents and its benchmark with.

The defaults build them straight from the experiment's config; the Dagster layer passes its
resources instead, which own their lifetimes (and can start what they need, such as the
offline model server or a Harbor environment)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from flashrsi_dagster.agents import Agent, target_agent, worker_agent
from flashrsi_dagster.agents.roles import reviewer_agent
from flashrsi_dagster.benchmarks.base import Benchmark
from flashrsi_dagster.benchmarks.loading import load_benchmark
from flashrsi_dagster.config.models import BenchmarkConfig, RoleConfig
from flashrsi_dagster.environments.confinement import Confinement


class AgentFactory(Protocol):
    """A role's config, the folder holding its harness files and the experiment's
    confinement -> a ready agent."""

    def __call__(
        self, config: RoleConfig, files_dir: Path | None, *, confinement: Confinement | None
    ) -> Agent: ...


BenchmarkFactory = Callable[[BenchmarkConfig], Benchmark]


@dataclass(frozen=True)
class Builders:
    target: AgentFactory = target_agent
    worker: AgentFactory = worker_agent
    reviewer: AgentFactory = reviewer_agent
    benchmark: BenchmarkFactory = load_benchmark


DEFAULT_BUILDERS = Builders()
