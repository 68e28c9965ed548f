"""`codex exec --json` output (one JSON event per line) as trajectory data.

The events: `thread.started`, `turn.started`, `item.started` / `item.updated` /
`item.completed` (an `item` of type `agent_message`, `reasoning`, `command_execution`,
`file_change`, `mcp_tool_call`, `web_search`, `todo_list` or `error`), `turn.completed` (with
`usage`), `turn.failed` (with `error`) and `error`. Only completed items are kept: a started
item is completed later with the same id, or the run was cut short.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")
"""Item types that are a tool call (`todo_list` is the plan tool's state, not a call)."""


@dataclass
class Transcript:
    items: list[dict[str, Any]] = field(default_factory=list)
    thread_id: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    completed: bool = False
    """A `turn.completed` arrived: the CLI finished its turn."""
    failures: list[str] = field(default_factory=list)
    """Messages of `turn.failed` and `error` events."""
    unreadable: int = 0
    """Lines that were not a JSON object (the CLI prints nothing else on stdout)."""

    @property
    def answer(self) -> str | None:
        messages = [i.get("text") for i in self.items if i.get("type") == "agent_message"]
        texts = [m for m in messages if isinstance(m, str)]
        return texts[-1] if texts else None

    @property
    def tool_calls(self) -> int:
        return sum(1 for item in self.items if item.get("type") in TOOL_ITEMS)

    def messages(self, instruction: str) -> list[dict[str, Any]]:
        """The instruction, then every completed item in order (each a message whose `role`
        says who produced it: the model's text and reasoning, or a tool's result)."""
        out: list[dict[str, Any]] = [{"role": "user", "content": instruction}]
        for item in self.items:
            out.append({"role": _ROLES.get(item.get("type"), "tool"), **item})
        return out


_ROLES = {"agent_message": "assistant", "reasoning": "assistant", "error": "notice"}
"""Who produced an item: the model, the CLI (`error` items are its warnings), else a tool."""


def read_events(data: bytes) -> Transcript:
    transcript = Transcript()
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            transcript.unreadable += 1
            continue
        _add(transcript, event)
    return transcript


def _add(transcript: Transcript, event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "thread.started":
        transcript.thread_id = str(event.get("thread_id"))
    elif kind == "item.completed" and isinstance(event.get("item"), dict):
        transcript.items.append(event["item"])
    elif kind == "turn.completed":
        transcript.completed = True
        usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
        for name, value in usage.items():
            if isinstance(value, int):
                transcript.usage[name] = transcript.usage.get(name, 0) + value
    elif kind == "turn.failed":
        error = event.get("error") if isinstance(event.get("error"), dict) else {}
        transcript.failures.append(str(error.get("message") or "the turn failed"))
    elif kind == "error":
        transcript.failures.append(str(event.get("message") or "error"))
