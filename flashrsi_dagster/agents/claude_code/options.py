"""The role config as `ClaudeAgentOptions` and the CLI's environment."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions

from flashrsi_dagster.agents.claude_code.extensions import (
    check_plugin,
    mcp_servers,
    session_settings,
)
from flashrsi_dagster.agents.claude_code.limits import ToolBudget, disallowed_tools, turn_options
from flashrsi_dagster.agents.claude_code.run_dir import RunDir
from flashrsi_dagster.config.models import LLMConfig, RoleConfig
from flashrsi_dagster.environments.confinement import AgentRun
from flashrsi_dagster.llm.client import ROLE_HEADER
from flashrsi_dagster.llm.endpoints import is_proxy_variable
from flashrsi_dagster.records.redaction import is_secret_env_name

# Variables that choose the CLI's provider, endpoint, model or credentials. The SDK passes the
# parent's whole environment on, so these are blanked: only the role config decides.
_ROUTING_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_USE_")

# Every model alias the CLI resolves (side tasks, `model: haiku` in an agent file, sub-agents)
# is pinned to the role's model: no request may go to a model the role did not name.
_MODEL_PINS = (
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)

_QUIET = {
    # Only model requests leave the CLI: no telemetry, update checks or error reports.
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    # Memory from earlier sessions would leak between runs and snapshots.
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    # With a model id the CLI does not know, send only user/assistant turns (no mid-conversation
    # `system` messages), which every Anthropic-compatible endpoint accepts.
    "CLAUDE_CODE_MODEL_CAPABILITIES": "-mid_conv_system",
    # bypassPermissions refuses to run as root otherwise (containers, CI).
    "IS_SANDBOX": "1",
}


def agent_options(
    config: RoleConfig,
    run: RunDir,
    session: SessionFiles,
    stderr: Callable[[str], None],
    confined: AgentRun,
    budget: ToolBudget,
) -> ClaudeAgentOptions:
    """One session's options: the `claude_code` preset (plus CLAUDE.md), the snapshot's plugin,
    MCP servers and settings (no implicit user or project settings), the role's model, limits
    and permissions, and the model gateway as its endpoint. A jailed run's CLI starts inside
    the jail (`jailed_cli`)."""
    llm = config.llm
    env = cli_env(llm, run, session.role, base_url=confined.base_url)
    system_prompt: dict[str, Any] = {"type": "preset", "preset": "claude_code"}
    if session.append:
        system_prompt["append"] = session.append
    turns = turn_options(config.max_turns)
    # The key reaches the CLI through a helper command, not the environment, so the CLI's
    # Bash tool (which inherits the environment) cannot print it.
    framework = {"apiKeyHelper": f"cat {shlex.quote(str(run.key_file))}"}
    settings = session_settings(session.snapshot, framework, env)
    check_plugin(run.plugin)
    servers = mcp_servers(session.snapshot, run.plugin) if "tools" not in turns else {}
    return ClaudeAgentOptions(
        cwd=str(session.working_dir),
        model=llm.model,
        env=env,
        cli_path=jailed_cli(confined, run, env, session.working_dir) if confined.jail else None,
        settings=json.dumps(settings),
        setting_sources=[],
        mcp_servers=servers,
        system_prompt=system_prompt,  # type: ignore[arg-type]
        plugins=[{"type": "local", "path": str(run.plugin)}],
        permission_mode="bypassPermissions",
        disallowed_tools=disallowed_tools(config),
        hooks=budget.hooks(),  # type: ignore[arg-type]
        thinking=_thinking(llm),  # type: ignore[arg-type]
        effort=llm.reasoning.effort if llm.reasoning else None,  # type: ignore[arg-type]
        forward_subagent_text=True,
        stderr=stderr,
        **turns,
    )


@dataclass(frozen=True)
class SessionFiles:
    """What one session runs on: the snapshot, the task's folder, the appended CLAUDE.md."""

    snapshot: Path
    working_dir: Path
    role: str
    append: str | None


def cli_env(
    llm: LLMConfig,
    run: RunDir,
    role: str,
    parent: Mapping[str, str] | None = None,
    *,
    base_url: str,
) -> dict[str, str]:
    """What the CLI adds to (and blanks in) the inherited environment."""
    parent = os.environ if parent is None else parent
    blanked = {
        name: ""
        for name in parent
        if is_secret_env_name(name)
        or name.startswith(_ROUTING_PREFIXES)
        or is_proxy_variable(name)  # its calls go to the gateway on loopback
    }
    limits = {
        "CLAUDE_CODE_MAX_RETRIES": str(llm.max_retries),
        "API_TIMEOUT_MS": str(round(llm.timeout * 1000)),
    }
    if llm.max_tokens:
        limits["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(llm.max_tokens)
    return {
        **blanked,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_CUSTOM_HEADERS": f"{ROLE_HEADER}: {role}",
        "CLAUDE_CONFIG_DIR": str(run.config),
        "CLAUDE_CODE_TMPDIR": str(run.tmp),
        **dict.fromkeys(_MODEL_PINS, llm.model),
        **limits,
        **_QUIET,
    }


def jailed_cli(confined: AgentRun, run: RunDir, env: dict[str, str], cwd: Path) -> str:
    """A per-run launcher the SDK starts as its CLI: it enters the run's jail as the jail user
    with the allow-list environment plus the CLI's own settings (what the SDK adds to the
    environment for the CLI is passed on by name), and runs the bundled CLI there."""
    assert confined.jail is not None
    variables = {**confined.env, **{k: v for k, v in env.items() if v}, "HOME": str(run.tmp)}
    variables |= {name: f"${{{name}}}" for name in _SDK_VARIABLES}  # expanded by the launcher
    argv = confined.jail.enter_argv([str(bundled_cli())], variables, cwd)
    passed = {f"{name}=${{{name}}}" for name in _SDK_VARIABLES}
    command = " ".join(f'"{a}"' if a in passed else shlex.quote(a) for a in argv)
    launcher = run.root / "claude-in-jail"
    launcher.write_text(f'#!/bin/sh\nexec {command} "$@"\n', encoding="utf-8")
    launcher.chmod(0o700)
    return str(launcher)


def bundled_cli() -> Path:
    """The Claude Code CLI that ships inside the claude-agent-sdk wheel."""
    import claude_agent_sdk

    return Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


# What the SDK sets for the CLI beyond our `env` (entry point, version), passed on by name.
_SDK_VARIABLES = ("CLAUDE_CODE_ENTRYPOINT", "CLAUDE_AGENT_SDK_VERSION")


def _thinking(llm: LLMConfig) -> dict[str, Any]:
    budget = llm.reasoning.budget_tokens if llm.reasoning else None
    return {"type": "enabled", "budget_tokens": budget} if budget else {"type": "disabled"}
