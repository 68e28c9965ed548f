"""Helpers for the ModularRSI policies: conversations driven against real folders."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.offline_model.conversation import Conversation, Message, Reply, ToolCall
from tests.offline_model.workspace_tools import Workspace

MODEL = "simulator/modular-worker"


def drive(
    policy: Callable[[Conversation], Reply], workspace: Workspace, task: str, turns: int = 10
) -> tuple[str, list[list[ToolCall]]]:
    """Run the policy's conversation to its final text, its tool calls executed in the folder
    for real; returns the text and the calls of each turn."""
    messages: list[Message] = [Message("user", task)]
    made: list[list[ToolCall]] = []
    for _ in range(turns):
        conversation = Conversation(MODEL, "You improve harnesses.", tuple(messages))
        reply = policy(conversation)
        start = len(conversation.tool_calls()) + 1
        calls = [
            ToolCall(c.name, c.arguments, f"call_{start + i}")
            for i, c in enumerate(reply.tool_calls)
        ]
        messages.append(Message("assistant", reply.text, tuple(calls)))
        if not calls:
            return reply.text, made
        made.append(calls)
        for call in calls:
            output = workspace.run(call.name, dict(call.arguments))
            messages.append(Message("tool", output, call_id=call.id))
    raise AssertionError(f"the policy did not finish in {turns} turns")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout of MiniAgent's built-in harness (the seed the five modules share)."""
    folder = tmp_path / "checkout"
    shutil.copytree(HARNESS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder
