"""Trajectories as the adapters write them: the run-config message every adapter puts first,
MiniAgent's Chat Completions messages, and Claude Code's messages made by the adapter's own
`to_dict` from the SDK's message types."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flashrsi_dagster.agents.run_config import run_config_message
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.records import Redactor, Status, Trajectory, Usage


def run_config(adapter: str = "miniagent", role: str = "worker") -> dict[str, Any]:
    config = RoleConfig.model_validate({"type": adapter, "llm": {"model": "simulator/worker"}})
    return run_config_message(config, "ab" * 20, role, Redactor(environ={}))


def mini_call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """One tool call as MiniAgent's model client records it (`runtime/llm.py`)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(arguments)},
    }


def mini_messages(*turns: tuple[str | None, list[tuple[dict, str]]]) -> list[dict[str, Any]]:
    """MiniAgent's conversation: each turn is (assistant text, [(call, its result), ...])."""
    messages = [
        run_config(),
        {"role": "system", "content": "You are MiniAgent."},
        {"role": "user", "content": "Improve the harness."},
    ]
    for text, calls in turns:
        assistant: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            assistant["tool_calls"] = [call for call, _ in calls]
        messages.append(assistant)
        messages += [
            {"role": "tool", "tool_call_id": call["id"], "content": result}
            for call, result in calls
        ]
    return messages


def trajectory(messages: list[dict[str, Any]], **fields: Any) -> Trajectory:
    values: dict[str, Any] = {
        "task_id": "t1",
        "split": "dev",
        "snapshot_id": "c" * 40,
        "status": Status.SUCCESS,
        "score": 1.0,
        "answer": "done",
        "messages": messages,
        "usage": Usage(input_tokens=1200, output_tokens=34, turns=3, tool_calls=2),
        "duration": 2.5,
    }
    return Trajectory(**(values | fields))


WORK = "/run/work"
"""The working folder the Claude Code session below reports in its `init` event."""


@pytest.fixture
def claude_messages() -> list[dict[str, Any]]:
    """A Claude Code Worker session as the adapter records it: the SDK's messages through the
    adapter's own `Transcript` (skipped without the `claude` extra)."""
    sdk = pytest.importorskip("claude_agent_sdk")
    from flashrsi_dagster.agents.claude_code.transcript import Transcript

    def said(message_id: str, *blocks: Any) -> Any:
        return sdk.AssistantMessage(content=list(blocks), model="claude", message_id=message_id)

    def use(call_id: str, name: str, **arguments: Any) -> Any:
        return sdk.ToolUseBlock(id=call_id, name=name, input=arguments)

    def result(call_id: str, content: Any, is_error: bool | None = None) -> Any:
        return sdk.UserMessage(content=[sdk.ToolResultBlock(call_id, content, is_error)])

    session = [
        sdk.SystemMessage("init", {"cwd": WORK, "tools": ["Read", "Edit", "Bash"]}),
        said("m1", sdk.TextBlock("Let me look at the prompt.")),
        said("m1", use("u1", "Read", file_path=f"{WORK}/prompts/system.md")),
        said("m1", use("u2", "Bash", command="ls history")),
        result("u1", "1\tYou are a careful classifier."),
        result("u2", [{"type": "text", "text": "round-000"}], is_error=False),
        said(
            "m2",
            use(
                "u3",
                "Edit",
                file_path=f"{WORK}/prompts/system.md",
                old_string="careful",
                new_string="very careful",
            ),
        ),
        result("u3", "The file prompts/system.md has been updated successfully."),
        said(
            "m3",
            use(
                "u4", "Write", file_path=f"{WORK}/skills/labels/SKILL.md", content="Use\nlabels.\n"
            ),
        ),
        result("u4", "File created successfully"),
        said("m4", use("u5", "Grep", pattern="TODO", path="prompts")),
        result("u5", "<tool_use_error>Error: No such tool available: Grep.</tool_use_error>", True),
        said("m4", use("u6", "Glob", pattern="**/*.md")),
        result("u6", "prompts/system.md"),
        said("m5", use("u7", "TodoWrite", todos=[{"content": "check", "status": "done"}])),
        result("u7", "Todos updated"),
        said("m6", sdk.TextBlock("Sharpened the prompt and added a skill.")),
        sdk.ResultMessage("success", 10, 5, False, 6, "session", stop_reason="end_turn"),
    ]
    transcript = Transcript()
    transcript.prompt("Improve the harness.")
    for message in session:
        transcript.add(message)
    return [run_config("claude-code"), *transcript.messages]
