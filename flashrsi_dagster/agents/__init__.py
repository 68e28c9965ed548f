"""Agents: the `Agent` base class, the two roles, the adapter registry and the adapters."""

from flashrsi_dagster.agents.base import Agent, AgentConfigError
from flashrsi_dagster.agents.registry import ADAPTERS, UnknownAdapterError, adapter_class
from flashrsi_dagster.agents.roles import (
    WorkerConfigError,
    harness_components,
    harness_dir,
    target_agent,
    worker_agent,
)

__all__ = [
    "ADAPTERS",
    "Agent",
    "AgentConfigError",
    "UnknownAdapterError",
    "WorkerConfigError",
    "adapter_class",
    "harness_components",
    "harness_dir",
    "target_agent",
    "worker_agent",
]
