"""Harbor as the environment executor of FlashRSI agents: `bind(agent)` before a rollout of
tasks that have their own environment (`Task.environment`, Harbor task folders), and the agent
runs inside each trial's environment (`inside.run_inside`). The Terminal-Bench benchmark (and
so the CLI runner) binds its agents itself.

Harbor builds agents from a config it also writes to disk, so the live `Agent` cannot travel
in it: the rollout lends the agent under a token (`lend`), the config carries the token, and
the trajectory comes back through the same loan.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

import flashrsi_dagster
from flashrsi_dagster.agents.base import Agent
from flashrsi_dagster.integrations.inside import run_inside
from flashrsi_dagster.records import Trajectory

IMPORT_PATH = f"{__name__}:FlashRSIHarborAgent"
HARBOR = "harbor"
"""`Agent.environment_executor` of a bound agent."""


def bind(agent: Agent) -> Agent:
    """Run `agent` inside Harbor task environments from now on (returns it). Whether it can
    is checked before each batch (`Agent._check_container`)."""
    agent.environment_executor = HARBOR
    return agent


@dataclass
class Loan:
    agent: Agent
    task_id: str
    split: str
    attempt: int
    trajectory: Trajectory | None = None


_loans: dict[str, Loan] = {}
_lock = threading.Lock()


@contextmanager
def lend(loan: Loan) -> Iterator[str]:
    token = uuid.uuid4().hex
    with _lock:
        _loans[token] = loan
    try:
        yield token
    finally:
        with _lock:
            _loans.pop(token, None)


class FlashRSIHarborAgent(BaseAgent):
    """A Harbor agent that runs the lent FlashRSI agent inside the trial's environment."""

    def __init__(self, logs_dir: Path, *args: Any, token: str, **kwargs: Any) -> None:
        super().__init__(logs_dir, *args, **kwargs)
        self.token = token

    @staticmethod
    def name() -> str:
        return "flashrsi"

    def version(self) -> str:
        return flashrsi_dagster.__version__

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        with _lock:
            loan = _loans[self.token]
        task = {"id": loan.task_id, "split": loan.split, "attempt": loan.attempt}
        loan.trajectory = await run_inside(loan.agent, environment, instruction, task)
        usage = loan.trajectory.usage
        context.n_input_tokens = usage.input_tokens
        context.n_output_tokens = usage.output_tokens
        context.cost_usd = usage.cost
