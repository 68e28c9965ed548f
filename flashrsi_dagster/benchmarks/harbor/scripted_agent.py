"""`ScriptedShellAgent`: a Harbor agent that runs a fixed list of shell commands.

It is the smallest real agent, and the pattern any agent wrapper follows: Harbor calls
`setup(environment)` then `run(instruction, environment, context)`, and everything the agent
does in the task happens through `environment.exec(command, cwd=..., env=...,
timeout_sec=...)` (which runs `bash -c` in the task's container, as root here). Tests use it
as a scripted stand-in for a model-driven agent; select it by import path::

    AgentConfig(import_path=SCRIPTED_AGENT_IMPORT_PATH, kwargs={"commands": ["ls /app"]})
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import override

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

SCRIPTED_AGENT_IMPORT_PATH = f"{__name__}:ScriptedShellAgent"


class ScriptedShellAgent(BaseAgent):
    """Runs `commands` in order with `environment.exec`, logging each result to
    `commands.jsonl` in its logs folder; a failing command does not stop the script."""

    def __init__(
        self,
        logs_dir: Path,
        commands: list[str] | None = None,
        command_timeout_sec: float = 60.0,
        **kwargs,
    ) -> None:
        super().__init__(logs_dir=logs_dir, **kwargs)
        self.commands = list(commands or [])
        self.command_timeout_sec = command_timeout_sec

    @staticmethod
    @override
    def name() -> str:
        return "scripted-shell"

    @override
    def version(self) -> str:
        return "1"

    @override
    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    @override
    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        log = self.logs_dir / "commands.jsonl"
        exit_codes = []
        for command in self.commands:
            result = await environment.exec(command, timeout_sec=int(self.command_timeout_sec))
            exit_codes.append(result.return_code)
            record = {"command": command, **result.model_dump()}
            with log.open("a") as handle:
                handle.write(json.dumps(record) + "\n")
        context.metadata = {"exit_codes": exit_codes}
