"""Agents: the `Agent` base class, the two roles, the adapter registry and the adapters."""

from flashrsi_dagster.agents.base import Agent, AgentConfigError
from flashrsi_dagster.agents.registry import ADAPTERS, UnknownAdapterError, adapter_class
from flashrsi_dagster.agents.roles import (
    TargetAgent,
    WorkerAgent,
    WorkerConfigError,
    harness_dir,
)

__all__ = [
    "ADAPTERS",
    "Agent",
    "AgentConfigError",
    "TargetAgent",
    "UnknownAdapterError",
    "WorkerAgent",
    "WorkerConfigError",
    "adapter_class",
    "harness_dir",
]
