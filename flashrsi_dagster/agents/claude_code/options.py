"""The role config as `ClaudeAgentOptions` and the CLI's environment."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions

from flashrsi_dagster.agents.claude_code.run_dir import RunDir
from flashrsi_dagster.config.models import LLMConfig, RoleConfig
from flashrsi_dagster.llm.client import ROLE_HEADER
from flashrsi_dagster.llm.endpoints import anthropic_base_url
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
    working_dir: Path,
    role: str,
    append: str | None,
    stderr: Callable[[str], None],
) -> ClaudeAgentOptions:
    """One session's options: the `claude_code` preset (plus CLAUDE.md), the snapshot's plugin,
    no implicit user or project settings, and the role's model, endpoint and limits."""
    llm = config.llm
    system_prompt: dict[str, Any] = {"type": "preset", "preset": "claude_code"}
    if append:
        system_prompt["append"] = append
    return ClaudeAgentOptions(
        cwd=str(working_dir),
        model=llm.model,
        env=cli_env(llm, run, role),
        # The key reaches the CLI through a helper command, not the environment, so the CLI's
        # Bash tool (which inherits the environment) cannot print it.
        settings=json.dumps({"apiKeyHelper": f"cat {shlex.quote(str(run.key_file))}"}),
        setting_sources=[],
        system_prompt=system_prompt,  # type: ignore[arg-type]
        plugins=[{"type": "local", "path": str(run.plugin)}],
        permission_mode="bypassPermissions",
        max_turns=config.max_turns,
        thinking=_thinking(llm),  # type: ignore[arg-type]
        effort=llm.reasoning.effort if llm.reasoning else None,  # type: ignore[arg-type]
        forward_subagent_text=True,
        stderr=stderr,
    )


def cli_env(
    llm: LLMConfig, run: RunDir, role: str, parent: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What the CLI adds to (and blanks in) the inherited environment."""
    parent = os.environ if parent is None else parent
    blanked = {
        name: ""
        for name in parent
        if is_secret_env_name(name) or name.startswith(_ROUTING_PREFIXES)
    }
    limits = {
        "CLAUDE_CODE_MAX_RETRIES": str(llm.max_retries),
        "API_TIMEOUT_MS": str(round(llm.timeout * 1000)),
    }
    if llm.max_tokens:
        limits["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(llm.max_tokens)
    return {
        **blanked,
        "ANTHROPIC_BASE_URL": anthropic_base_url(llm),
        "ANTHROPIC_CUSTOM_HEADERS": f"{ROLE_HEADER}: {role}",
        "CLAUDE_CONFIG_DIR": str(run.config),
        "CLAUDE_CODE_TMPDIR": str(run.tmp),
        **dict.fromkeys(_MODEL_PINS, llm.model),
        **limits,
        **_QUIET,
    }


def _thinking(llm: LLMConfig) -> dict[str, Any]:
    budget = llm.reasoning.budget_tokens if llm.reasoning else None
    return {"type": "enabled", "budget_tokens": budget} if budget else {"type": "disabled"}
