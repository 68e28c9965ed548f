"""What an algorithm builds its agents and its benchmark with.

The defaults build them straight from the experiment's config; the Dagster layer passes its
resources instead, which own their lifetimes (and can start what they need, such as the
offline model server or a Harbor environment)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.agents import Agent, TargetAgent, WorkerAgent
from flashrsi_dagster.benchmarks.base import Benchmark
from flashrsi_dagster.benchmarks.loading import load_benchmark
from flashrsi_dagster.config.models import BenchmarkConfig, RoleConfig

AgentFactory = Callable[[RoleConfig, Path | None], Agent]
"""A role's config and the folder holding its harness files -> a ready agent."""
BenchmarkFactory = Callable[[BenchmarkConfig], Benchmark]


@dataclass(frozen=True)
class Parts:
    target: AgentFactory = TargetAgent
    worker: AgentFactory = WorkerAgent
    benchmark: BenchmarkFactory = load_benchmark


DEFAULT_PARTS = Parts()
