"""The Claude Code adapter: one official SDK session per run, the snapshot as a local plugin.

The session gets the native `claude_code` system prompt with the snapshot's `CLAUDE.md`
appended when it is non-empty, the snapshot's `skills/`, `agents/`, `hooks/` and `mcp/` as a
local plugin, and its `.mcp.json` and `settings.json` passed explicitly under the framework's
own keys; user and project settings, auto memory and non-essential traffic are off. Session
files live in a per-run temporary folder (`run_dir.py`) that is removed afterwards.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flashrsi_dagster.agents.base import Agent
from flashrsi_dagster.agents.budgets import Budget, budget_verdict
from flashrsi_dagster.agents.claude_code import container
from flashrsi_dagster.agents.claude_code.login import (
    credentials_path,
    login_token,
    login_upstream,
)
from flashrsi_dagster.agents.claude_code.options import SessionFiles, bundled_cli
from flashrsi_dagster.agents.claude_code.run_dir import run_dir
from flashrsi_dagster.config.models import LLMConfig, RoleConfig
from flashrsi_dagster.environments.confinement import gateway_verdict
from flashrsi_dagster.environments.jail import Mount
from flashrsi_dagster.gateway import Upstream
from flashrsi_dagster.records import ErrorInfo, Redactor, Status, Trajectory

if TYPE_CHECKING:
    from claude_agent_sdk import ResultMessage

    from flashrsi_dagster.agents.claude_code.session import Outcome

HARNESS = Path(__file__).with_name("harness")
CLAUDE_MD = "CLAUDE.md"
STDERR_TAIL = 4000
# Endpoint failures worth a rerun (as for MiniAgent): no answer at all, 408, 409, 429 and 5xx.
_RETRYABLE_HTTP = {408, 409, 429}


class ClaudeCode(Agent):
    name = "claude-code"
    description = (
        "Claude Code through the official claude-agent-sdk: the snapshot's CLAUDE.md, skills, "
        "sub-agents and hooks on the native claude_code system prompt and tools."
    )
    has_file_tools = True
    supports_login = True
    _container_dependencies = container.CONTAINER_DEPENDENCIES
    _check_container = container.check_container
    supported_apis = ("anthropic",)
    api_hint = " (for OpenAI-compatible endpoints use type miniagent)"
    protected = (
        "settings.json",
        "settings.local.json",
        ".claude/**",
        ".mcp.json",
        "**/.mcp.json",
        ".claude-plugin/plugin.json#mcpServers",
        ".claude-plugin/plugin.json#lspServers",
    )
    """Where Claude Code reads permissions (allow / deny lists) and extra tools (MCP and LSP
    servers, which the snapshot's own plugin manifest may declare when a harness makes it
    evolvable): protected even if a harness declares them. Hooks stay evolvable: the framework
    runs the CLI with `bypassPermissions` and its own settings, so a hook has no approval left
    to grant; `max_turns`, the timeouts and the permissions come from the role config, and
    `max_tool_calls` is counted by the framework's own hook, which no snapshot hook can undo."""

    @classmethod
    def config_problems(cls, config: RoleConfig, where: str) -> list[str]:
        problems = super().config_problems(config, where) + llm_problems(config.llm, where)
        missing = _missing_sdk(where)
        return [*problems, missing] if missing else problems

    @classmethod
    def gateway_budget(cls, config: RoleConfig) -> Budget:
        """`max_turns` model calls and the answer, the sub-agents' calls included (the CLI's
        `--max-turns` counts only the main loop's, so a sub-agent, which a snapshot's agent
        file defines, would otherwise run unbounded). The tool-call budget is the framework
        hook's (`limits.ToolBudget`): a refused call does not end the CLI's loop, so
        `max_tool_calls + 2` model calls would not bound it."""
        return Budget(config.max_turns, None)

    @classmethod
    def builtin_harness(cls) -> Path:
        return HARNESS

    def _run(
        self, working_dir: Path, instruction: str, mounts: tuple[Mount, ...] = ()
    ) -> Trajectory:
        from flashrsi_dagster.agents.claude_code.session import run_session  # optional extra

        config = self.run_config
        clock = time.monotonic()
        work = Path(working_dir).resolve()
        upstream, redactor = self._credentials(config)
        # Without `edit`, the folder is mounted read-only: the shell cannot write either.
        folder = (work,) if config.permissions.edit else ()
        with (
            run_dir(self.files_dir) as run,
            self.confinement.run(
                self.role,
                config.llm,
                # Not the run folder itself: its launcher runs as root on the host.
                writable=(*folder, run.config, run.tmp),
                read_only=(
                    Mount(bundled_cli().parent),
                    Mount(run.plugin),
                    *([] if folder else [Mount(work)]),
                    *mounts,
                ),
                upstream=upstream,
                max_model_calls=self.gateway_budget(config).max_model_calls,
            ) as confined,
        ):
            # The token (worthless outside this jail) where the CLI's key helper reads it.
            run.key_file.write_text(confined.token, encoding="utf-8")
            run.key_file.chmod(0o644)
            session = SessionFiles(self.files_dir, work, self.role, _claude_md(self.files_dir))
            outcome = run_session(config, run, session, instruction, confined)

        def redact(value: Any) -> Any:
            return redactor.value(self.redactor.value(value))

        trajectory = _trajectory(outcome, config, redact, time.monotonic() - clock)
        trajectory = gateway_verdict(trajectory, confined.usage, outcome.timed_out)
        return budget_verdict(trajectory, self.gateway_budget(config), confined.usage)

    @staticmethod
    def _credentials(config: RoleConfig) -> tuple[Upstream | None, Redactor]:
        """For `llm.auth: login`, the upstream that carries the native login (read now, and
        only for such a role) and a redactor that knows it; else the role's own upstream."""
        if config.llm.auth != "login":
            return None, Redactor(environ={})
        token = login_token(credentials_path())
        return login_upstream(config.llm, token), Redactor([token], environ={})


def llm_problems(llm: LLMConfig, where: str) -> list[str]:
    """Settings the Claude Code CLI cannot honour, naming the config key (`where`: `agent`)."""
    unsupported = [
        name
        for name, value in [("temperature", llm.temperature), ("extra_body", llm.extra_body)]
        if value
    ]
    if llm.reasoning and llm.reasoning.effort == "minimal":
        unsupported.append("reasoning.effort: minimal")
    if not unsupported:
        return []
    return [
        f"{where}.llm: the Claude Code CLI has no setting for {', '.join(unsupported)}; "
        "remove it for type claude-code"
    ]


def _missing_sdk(where: str) -> str | None:
    try:
        importlib.import_module("claude_agent_sdk")
    except ImportError:
        return (
            f"{where}.type: claude-code needs the claude-agent-sdk package, which bundles the "
            "Claude Code CLI: install the `claude` extra, e.g. pip install "
            "'flashrsi-dagster[claude]'"
        )
    return None


def _claude_md(files_dir: Path) -> str | None:
    """The snapshot's CLAUDE.md, when it has one with content (the built-in harness has none)."""
    path = files_dir / CLAUDE_MD
    # Read on the host: a link would put a host file into the system prompt.
    text = path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else ""
    return text if text.strip() else None


def _trajectory(
    outcome: Outcome, config: RoleConfig, redact: Callable[[Any], Any], duration: float
) -> Trajectory:
    transcript = outcome.transcript
    last = transcript.last_result
    error = _error(outcome, config.timeout)
    metadata = {
        "session_id": last.session_id if last else None,
        "terminal_reason": _ending(outcome)[0],
        "subagents": transcript.subagents,
        "tool_budget": outcome.budget.summary(),
        "stderr_tail": "\n".join(outcome.stderr)[-STDERR_TAIL:],
    }
    return Trajectory(
        task_id="",
        snapshot_id="",
        status=_status(outcome),
        answer=redact(transcript.answer()),
        messages=redact(transcript.messages),
        usage=transcript.usage(config.llm.price),
        duration=duration,
        error=ErrorInfo.model_validate(redact(error.model_dump())) if error else None,
        metadata=redact(metadata),
    )


def _status(outcome: Outcome) -> Status:
    if outcome.timed_out:
        return Status.TIMEOUT
    if outcome.failure is None and _completed(outcome.transcript.last_result):
        return Status.SUCCESS
    reason, code = _ending(outcome)
    if reason == "api_error" and (code is None or code in _RETRYABLE_HTTP or code >= 500):
        return Status.INFRA_ERROR
    return Status.ERROR  # the agent's own failure: max turns, an aborted session, a 4xx


def _ending(outcome: Outcome) -> tuple[str | None, int | None]:
    """Why the session ended, and the failing HTTP status: the SDK's `ResultError` carries
    both, as does the last result message."""
    last = outcome.transcript.last_result
    reason = getattr(outcome.failure, "terminal_reason", None) or (
        last.terminal_reason if last else None
    )
    code = getattr(outcome.failure, "api_error_status", None) or (
        last.api_error_status if last else None
    )
    return reason, code


def _error(outcome: Outcome, timeout: float) -> ErrorInfo | None:
    if outcome.timed_out:
        return ErrorInfo(
            type="TimeoutError", message=f"the run exceeded its timeout of {timeout} s"
        )
    if outcome.failure is not None:
        return ErrorInfo.from_exception(outcome.failure)
    last = outcome.transcript.last_result
    if last is None:
        return ErrorInfo(type="SessionError", message="the Claude Code session gave no result")
    if last.is_error:
        detail = last.result or "; ".join(last.errors or []) or "no detail"
        return ErrorInfo(type="ResultError", message=f"{last.subtype}: {detail}")
    if not _completed(last):
        return ErrorInfo(
            type="SessionStopped",
            message=f"the session stopped before it completed ({last.terminal_reason})",
        )
    return None


def _completed(last: ResultMessage | None) -> bool:
    """A result that answers: not an error, and not a session a hook stopped or paused (the
    CLI reports those as a `success` without an answer)."""
    if last is None or last.is_error:
        return False
    return last.terminal_reason in (None, "completed")
