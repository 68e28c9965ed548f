"""The role's budgets and permissions as the CLI's options, and the tool-call budget that the
framework enforces from outside the snapshot.

`max_turns`: None leaves the CLI unlimited; 0 offers no tool at all (the model can only answer:
the CLI would read `--max-turns 0` as no limit); n is the CLI's own hard stop. `max_tool_calls`
is counted by a `PreToolUse` hook that runs in the framework's process (an SDK callback), so no
file of the snapshot can change it, and a snapshot hook cannot undo its refusal: the CLI
refuses a call when any hook denies it. It counts the sub-agents' calls too.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import HookMatcher

from flashrsi_dagster.config.models import RoleConfig

SHELL_TOOLS = ("Bash", "Monitor")
"""The CLI's tools that run commands (`Monitor` runs a command until a condition holds)."""
EDIT_TOOLS = ("Edit", "Write", "NotebookEdit")


def disallowed_tools(config: RoleConfig) -> list[str]:
    """`permissions` as the CLI's `--disallowedTools` (the working folder of a role without
    `edit` is also mounted read-only, so its shell cannot write either)."""
    permissions = config.permissions
    denied = [
        *([] if permissions.shell else SHELL_TOOLS),
        *([] if permissions.edit else EDIT_TOOLS),
        *permissions.deny_tools,
    ]
    return list(dict.fromkeys(denied))


def turn_options(max_turns: int | None) -> dict[str, Any]:
    """`max_turns` as `ClaudeAgentOptions` fields."""
    if max_turns == 0:  # one model call, nothing to call: the answer comes without tools
        return {"max_turns": 1, "tools": [], "strict_mcp_config": True}
    return {"max_turns": max_turns}


def tool_limit(config: RoleConfig) -> int | None:
    """The tool calls a run may make: none at all without a tool-using turn (a plugin's MCP
    server may still offer its tools), else `max_tool_calls`."""
    return 0 if config.max_turns == 0 else config.max_tool_calls


class ToolBudget:
    """Allows the first `limit` tool calls of a run and refuses every later one (None: no
    count limit, 0: none allowed), with a message the model reads as the tool's result."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.allowed = 0
        self.refused = 0

    def hooks(self) -> dict[str, list[HookMatcher]] | None:
        if self.limit is None:
            return None
        return {"PreToolUse": [HookMatcher(matcher=None, hooks=[self._pre_tool_use])]}

    def summary(self) -> dict[str, int | None]:
        return {"limit": self.limit, "allowed": self.allowed, "refused": self.refused}

    async def _pre_tool_use(
        self, hook_input: Any, tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        if self.limit is None or self.allowed < self.limit:
            self.allowed += 1
            return {}
        self.refused += 1
        reason = (
            f"Refused: this run may make at most {self.limit} tool call(s), and all are used. "
            "Answer now with what you have."
        )
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
