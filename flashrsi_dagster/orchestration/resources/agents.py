"""The target agent and the Worker agent as Dagster resources.

An agent is built from the experiment's role config (the experiment's identity), so the
resources hold no settings that could change results; they own the agents' lifetimes: every
agent built during a run is closed when the run's step ends, also after a failure."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import dagster as dg
from pydantic import PrivateAttr

from flashrsi_dagster.agents import Agent, target_agent, worker_agent
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement

_FACTORIES = {"target": target_agent, "worker": worker_agent}


class _AgentResource(dg.ConfigurableResource):
    role: ClassVar[str]
    _built: list[Agent] = PrivateAttr(default_factory=list)

    def build(
        self, role: RoleConfig, files_dir: Path | None, *, confinement: Confinement | None = None
    ) -> Agent:
        agent = _FACTORIES[self.role](role, files_dir, confinement=confinement)
        self._built.append(agent)
        return agent

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        while self._built:
            self._built.pop().close()


class TargetAgentResource(_AgentResource):
    """The agent that runs the benchmark's tasks with a snapshot's harness (`agent:`)."""

    role = "target"


class WorkerAgentResource(_AgentResource):
    """The coding agent that edits the harness (`algorithm.worker:`); needs file tools."""

    role = "worker"
