"""The plain-LLM adapter: the harness's `prompts/system.md` as the system message, the task as
the user message, one call to the role's model. It has no tools, so it can never be a Worker.

Its budgets hold trivially, and 0 breaks nothing: it runs no tool (`max_tool_calls` of any
value, 0 included, is never reached) and takes no tool-using turn; its one call is the final
answer, which the budgets always allow (`max_turns: 0` too: the model is asked only for its
final answer). The gateway answers that one call only (`max_model_calls=1`)."""

from __future__ import annotations

import time
from pathlib import Path

from flashrsi_dagster.agents.base import Agent, AgentConfigError, status_of
from flashrsi_dagster.environments.confinement import gateway_verdict
from flashrsi_dagster.llm.client import LLMClient
from flashrsi_dagster.llm.usage import UsageMeter
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory, Usage

HARNESS = Path(__file__).with_name("harness")
PROMPT = Path("prompts/system.md")


class PlainLLM(Agent):
    name = "llm"
    description = "One model call with the harness prompt as system message; no tools."

    def _setup(self) -> None:
        self.meter = UsageMeter(self.role, self.config.llm.model, self.config.llm.price)

    @classmethod
    def builtin_harness(cls) -> Path:
        return HARNESS

    def _run(self, working_dir: Path, instruction: str) -> Trajectory:
        clock = time.monotonic()
        path = self.files_dir / PROMPT
        if any(p.is_symlink() for p in (path, path.parent)):  # read here, on the host
            raise AgentConfigError(f"{PROMPT}: a symlink; the prompt must be the snapshot's file")
        system = path.read_text(encoding="utf-8")
        messages = [{"role": "system", "content": system}, {"role": "user", "content": instruction}]
        llm = self.run_config.llm
        # No process and no harness code run here, so there is nothing to jail; the call
        # still goes through the gateway, which meters it and enforces the role's caps.
        confinement = self.confinement.unjailed()
        with confinement.run(self.role, llm, writable=(), max_model_calls=1) as confined:
            via = (confined.base_url, confined.token)
            client = LLMClient(llm, self.role, meter=self.meter, via=via)
            try:
                trajectory = _answer(client, messages)
            except Exception as exc:  # the run's failure is data, settled by the gateway below
                trajectory = Trajectory(
                    task_id="",
                    snapshot_id="",
                    status=status_of(exc),
                    error=ErrorInfo.from_exception(exc),
                )
            finally:
                client.close()
        trajectory.duration = time.monotonic() - clock
        return gateway_verdict(trajectory, confined.usage, timed_out=False)


def _answer(client: LLMClient, messages: list[dict]) -> Trajectory:
    completion = client.complete(messages)
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
        messages=[*messages, {"role": "assistant", "content": completion.text}],
        usage=usage,
    )
