"""The role config in the Codex CLI's terms: the framework's `config.toml` keys and command
line, and what of the role config the CLI cannot honour (`problems`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flashrsi_dagster.agents.codex_cli.home import PROVIDER, TOKEN_ENV
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.llm.client import ROLE_HEADER

SHELL_TOOLS = ("exec_command", "write_stdin", "shell")
"""The CLI's shell tools: one switch (`features.shell_tool`) offers or withholds them all."""
DENIABLE = (*SHELL_TOOLS, "apply_patch", "update_plan")
"""The tool names `permissions.deny_tools` may list for type codex-cli."""


def problems(config: RoleConfig, where: str) -> list[str]:
    """What the CLI cannot honour, one line each naming the key under `where`."""
    out = []
    llm = config.llm
    unsupported = [
        name
        for name, value in [
            ("temperature", llm.temperature),
            ("max_tokens", llm.max_tokens),
            ("extra_body", llm.extra_body),
        ]
        if value
    ]
    if llm.reasoning and llm.reasoning.budget_tokens:
        unsupported.append("reasoning.budget_tokens")
    if unsupported:
        out.append(
            f"{where}.llm: the Codex CLI has no setting for {', '.join(unsupported)}; remove "
            "it for type codex-cli"
        )
    unknown = [name for name in config.permissions.deny_tools if name not in DENIABLE]
    if unknown:
        out.append(
            f"{where}.permissions.deny_tools: the Codex CLI cannot withhold "
            f"{', '.join(map(repr, unknown))}; it can withhold {', '.join(DENIABLE)}"
        )
    return out + budget_problems(config, where)


def budget_problems(config: RoleConfig, where: str) -> list[str]:
    """The CLI counts neither turns nor tool calls, and offers its tools on every call. A
    turn budget n is the model gateway's to enforce (`Budget.max_model_calls`: it answers n + 1
    calls of the run, then refuses, and the run ends as over its budget); a budget of zero
    turns, or any tool-call budget, would need a CLI that withholds or refuses tools, so it is
    refused rather than not enforced."""
    out = []
    if config.max_turns == 0:
        out.append(
            f"{where}.max_turns: 0 asks for an answer without tools, which the Codex CLI "
            "cannot give (it offers its tools on every call); set null or at least 1"
        )
    if config.max_tool_calls is not None:
        out.append(
            f"{where}.max_tool_calls: the Codex CLI cannot refuse a tool call; set null (and "
            f"bound the run with {where}.max_turns) for type codex-cli"
        )
    if config.debug_llm_io:
        out.append(
            f"{where}.debug_llm_io: the Codex CLI does not report its model exchanges; set false"
        )
    return out


def shell_allowed(config: RoleConfig) -> bool:
    denied = set(config.permissions.deny_tools)
    return config.permissions.shell and not denied.intersection(SHELL_TOOLS)


def framework_config(
    config: RoleConfig, role: str, base_url: str, catalog: Path, sandbox: str
) -> dict[str, Any]:
    """The `config.toml` keys the framework sets over the snapshot's (`home.FRAMEWORK_KEYS`
    are removed from the snapshot's first): the gateway as the only provider, the role's
    model, the sandbox, no approvals, no hosted web search, no telemetry."""
    llm = config.llm
    provider = {
        "name": "FlashRSI model gateway",
        "base_url": base_url,
        "wire_api": "responses",
        "env_key": TOKEN_ENV,
        "http_headers": {ROLE_HEADER: role},
        "request_max_retries": llm.max_retries,
        "stream_max_retries": llm.max_retries,
        "stream_idle_timeout_ms": round(llm.timeout * 1000),
    }
    table: dict[str, Any] = {
        "model": llm.model,
        "model_provider": PROVIDER,
        "model_catalog_json": str(catalog),
        "approval_policy": "never",
        "sandbox_mode": sandbox,
        "web_search": "disabled",
        "check_for_update_on_startup": False,
        "analytics": {"enabled": False},
        "model_providers": {PROVIDER: provider},
        # The token's variable stays out of every command the agent runs.
        "shell_environment_policy": {
            "inherit": "all",
            "ignore_default_excludes": False,
            "exclude": ["FLASHRSI_*"],
        },
    }
    if llm.reasoning and llm.reasoning.effort:
        table["model_reasoning_effort"] = llm.reasoning.effort
    features: dict[str, Any] = {}
    if not shell_allowed(config):
        features["shell_tool"] = False
    if features:
        table["features"] = features
    if "update_plan" in config.permissions.deny_tools:
        table["tools"] = {"update_plan": {"enabled": False}}
    return table
