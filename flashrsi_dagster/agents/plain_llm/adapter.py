"""The plain-LLM adapter: the harness's `prompts/system.md` as the system message, the task as
the user message, one call to the role's model. It has no tools, so it can never be a Worker."""

from __future__ import annotations

import time
from pathlib import Path

from flashrsi_dagster.agents.base import Agent
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.llm.client import LLMClient
from flashrsi_dagster.records import Status, Trajectory, Usage

HARNESS = Path(__file__).with_name("harness")
PROMPT = Path("prompts/system.md")


class PlainLLM(Agent):
    name = "llm"
    description = "One model call with the harness prompt as system message; no tools."

    def __init__(
        self,
        config: RoleConfig,
        files_dir: Path,
        *,
        role: str = "target",
        confinement: Confinement | None = None,
    ) -> None:
        super().__init__(config, files_dir, role=role, confinement=confinement)
        self.client = LLMClient(self.config.llm, role)

    @classmethod
    def builtin_harness(cls) -> Path:
        return HARNESS

    def close(self) -> None:
        self.client.close()

    def _client(self) -> LLMClient:
        """The role's client, rebuilt only when the frozen config names another model or
        endpoint; usage keeps adding up on the same meter."""
        llm = self.run_config.llm
        if llm != self.client.config:
            self.client.close()
            self.client = LLMClient(llm, self.role, meter=self.client.meter)
        return self.client

    def _run(self, working_dir: Path, instruction: str) -> Trajectory:
        clock = time.monotonic()
        system = (self.files_dir / PROMPT).read_text(encoding="utf-8")
        messages = [{"role": "system", "content": system}, {"role": "user", "content": instruction}]
        completion = self._client().complete(messages)
        messages.append({"role": "assistant", "content": completion.text})
        usage = Usage(
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost=completion.cost,
            turns=1,
        )
        return Trajectory(
            task_id="",
            snapshot_id="",
            status=Status.SUCCESS,
            answer=completion.text,
            messages=messages,
            usage=usage,
            duration=time.monotonic() - clock,
        )
