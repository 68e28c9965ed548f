"""The MiniAgent adapter: runs the built-in harness (or any snapshot of it) as a subprocess."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.base import Agent, AgentConfigError, TaskEnvironment
from flashrsi_dagster.agents.miniagent.launcher import ForkServer, Run
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.llm.client import ROLE_HEADER, resolve_key
from flashrsi_dagster.llm.endpoints import openai_base_url
from flashrsi_dagster.llm.usage import cost_of
from flashrsi_dagster.records import ErrorInfo, Status, Trajectory, Usage
from flashrsi_dagster.records.redaction import is_secret_env_name

HARNESS = Path(__file__).with_name("harness")
CANCEL_GRACE_SECONDS = 2.0
_STDERR_TAIL = 4000


class MiniAgent(Agent):
    name = "miniagent"
    description = "FlashRSI's built-in tool-using agent: shell, editor and skills, as a subprocess."
    has_file_tools = True
    supports_environment = True

    def __init__(self, config: RoleConfig, files_dir: Path, *, role: str = "target") -> None:
        super().__init__(config, files_dir, role=role)
        if config.llm.api == "anthropic":
            raise AgentConfigError(
                f"{role}: MiniAgent talks to OpenAI-compatible endpoints; set llm.api to "
                "`chat` or `responses` (or use type `claude-code` for the Anthropic API)"
            )
        # Secrets stay out of the runs' environment: their shell must not be able to read them.
        env = {k: v for k, v in os.environ.items() if not is_secret_env_name(k)}
        self._server = ForkServer.shared(env)
        self._runs: set[Run] = set()

    @classmethod
    def builtin_harness(cls) -> Path:
        return HARNESS

    def close(self) -> None:
        """Kill this agent's runs still in flight; the shared fork server stays warm."""
        for run in list(self._runs):
            run.cancel(CANCEL_GRACE_SECONDS)

    def _run(
        self, working_dir: Path, instruction: str, environment: TaskEnvironment | None = None
    ) -> Trajectory:
        config = self.run_config
        with tempfile.TemporaryDirectory(prefix="miniagent-run-") as run_dir:
            output, stderr = Path(run_dir) / "result.json", Path(run_dir) / "stderr.log"
            payload = self._payload(config, working_dir, instruction, output)
            payload["stderr"] = str(stderr)
            if environment is not None:
                payload["shell_prefix"] = list(environment.shell_prefix)
            run = self._server.run(payload)
            clock = time.monotonic()  # from the moment the run's process exists
            self._runs.add(run)
            try:
                timed_out = run.wait(config.timeout, grace=CANCEL_GRACE_SECONDS)
            finally:
                self._runs.discard(run)
            result = _read_json(output)
            tail = stderr.read_text(errors="replace")[-_STDERR_TAIL:] if stderr.exists() else ""
        return self._trajectory(result, timed_out, run.exit_code, tail, time.monotonic() - clock)

    def _payload(self, config: RoleConfig, working_dir: Path, instruction: str, output: Path):
        llm = config.llm
        key = resolve_key(llm)
        return {
            "output": str(output),
            "files_dir": str(self.files_dir),
            "working_dir": str(Path(working_dir).resolve()),
            "instruction": instruction,
            "max_turns": config.max_turns,
            "llm": {
                **llm.model_dump(mode="json", exclude={"api_key", "base_url", "price"}),
                "base_url": openai_base_url(llm),
                "api_key": key,
                "headers": {ROLE_HEADER: self.role},
            },
            "secrets": [key],
        }

    def _trajectory(
        self,
        result: dict[str, Any] | None,
        timed_out: bool,
        code: int | None,
        tail: str,
        duration: float,
    ) -> Trajectory:
        result = result or {}
        usage = result.get("usage") or {}
        price = self.run_config.llm.price
        tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        error = result.get("error")
        if timed_out:
            error = {
                "type": "TimeoutError",
                "message": f"the run exceeded its timeout of {self.run_config.timeout} s",
            }
        elif not result:
            error = {
                "type": "ProcessError",
                "message": f"MiniAgent exited with code {code} without a result",
            }
        return Trajectory(
            task_id="",
            snapshot_id="",
            status=_status(result, timed_out),
            answer=result.get("answer"),
            messages=result.get("messages") or [],
            usage=Usage(
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost=cost_of(price, tokens_in, tokens_out),
                turns=usage.get("turns", 0),
                tool_calls=usage.get("tool_calls", 0),
            ),
            duration=duration,
            error=ErrorInfo(**error) if error else None,
            metadata={"exit_code": code, "stderr_tail": self.redactor.text(tail)},
        )


def _status(result: dict[str, Any], timed_out: bool) -> Status:
    if timed_out:
        return Status.TIMEOUT
    if result.get("status") == "completed":
        return Status.SUCCESS
    if result.get("error_kind") == "infra":
        return Status.INFRA_ERROR
    return Status.ERROR


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
