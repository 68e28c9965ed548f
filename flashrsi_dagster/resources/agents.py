"""The target agent and the Worker agent as Dagster resources.

An agent is built from the experiment's role config (the experiment's identity), so the
resources hold no settings that could change results; they own the agents' lifetimes: every
agent built during a run is closed when the run's step ends, also after a failure."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from flashrsi_dagster.agents import Agent, TargetAgent, WorkerAgent
from flashrsi_dagster.config.models import RoleConfig


class _AgentResource(dg.ConfigurableResource):
    _built: list[Agent] = PrivateAttr(default_factory=list)

    def build(self, role: RoleConfig, files_dir: Path | None) -> Agent:
        agent = self._factory(role, files_dir)
        self._built.append(agent)
        return agent

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        while self._built:
            self._built.pop().close()

    @staticmethod
    def _factory(role: RoleConfig, files_dir: Path | None) -> Agent:
        raise NotImplementedError


class TargetAgentResource(_AgentResource):
    """The agent that runs the benchmark's tasks with a snapshot's harness (`agent:`)."""

    @staticmethod
    def _factory(role: RoleConfig, files_dir: Path | None) -> Agent:
        return TargetAgent(role, files_dir)


class WorkerAgentResource(_AgentResource):
    """The coding agent that edits the harness (`algorithm.worker:`); needs file tools."""

    @staticmethod
    def _factory(role: RoleConfig, files_dir: Path | None) -> Agent:
        return WorkerAgent(role, files_dir)
