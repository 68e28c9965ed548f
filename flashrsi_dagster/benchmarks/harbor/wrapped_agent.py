"""Our agents inside Harbor: a Harbor agent (by import path) that runs a FlashRSI `Agent` with
its shell commands executed in the trial's environment.

Harbor builds agents from a config it also writes to disk, so the live `Agent` cannot travel
in it: the rollout lends the agent under a token (`lend`), the config carries the token, and
the trajectory comes back through the same loan.
"""

from __future__ import annotations

import asyncio
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
from flashrsi_dagster.agents.base import Agent, TaskEnvironment
from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.scratch import scratch_dir

IMPORT_PATH = f"{__name__}:FlashRSIHarborAgent"


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
        shell_argv = getattr(environment, "shell_argv", None)
        if shell_argv is None:
            raise RuntimeError(
                f"environment {type(environment).__name__} gives no shell to host processes; "
                "FlashRSI agents run in the local environment (benchmark.harbor_environment: "
                "local) — use it, or Harbor's own agents"
            )
        task_env = TaskEnvironment(shell_prefix=tuple(shell_argv()))
        with scratch_dir("harbor-") as scratch:
            loan.trajectory = await asyncio.to_thread(
                loan.agent.run,
                scratch,
                instruction,
                task_id=loan.task_id,
                split=loan.split,
                attempt=loan.attempt,
                environment=task_env,
            )
        usage = loan.trajectory.usage
        context.n_input_tokens = usage.input_tokens
        context.n_output_tokens = usage.output_tokens
        context.cost_usd = usage.cost
