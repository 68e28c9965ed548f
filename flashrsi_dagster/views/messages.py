"""A trajectory's messages as one list of entries with their tool calls, whatever adapter
wrote them.

Two shapes are read:

- Chat Completions (MiniAgent, plain LLM): an assistant message carries `tool_calls`
  (`{"id", "function": {"name", "arguments": JSON text}}`); each result is a `tool` message.
- Anthropic content blocks (Claude Code, `agents/claude_code/transcript.py`): an assistant
  message's `content` holds `text`, `thinking` and `tool_use` blocks; results come back as
  `tool_result` blocks of a user message. The CLI sends one message per block, so the blocks
  of one `message_id` are joined again into one entry.

Every trajectory starts with a `run_config` message (`agents/run_config.py`); Claude Code adds
`event` (the CLI's system events) and `result` messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOOL_ERROR_PREFIX = "Error:"
"""How a MiniAgent tool reports a failure to the model (`tools/base.py`)."""


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None
    result: str | None = None
    """The tool's output as text; None when none was recorded (a run cut short)."""
    failed: bool = False
    """The tool reported an error: Anthropic's `is_error`, or a result starting `Error:`."""


@dataclass
class Entry:
    role: str
    """`user`, `assistant`, `system`, `run_config`, `event`, `result`, or `tool` for a result
    whose call is not in the record."""
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    sub_agent: bool = False
    """Said inside a sub-agent (Claude Code's `parent_tool_use_id`)."""
    message_id: str | None = None


def read_entries(messages: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """The messages in order, each tool result attached to its call."""
    entries: list[Entry] = []
    calls: dict[str, ToolCall] = {}
    for message in messages:
        if _only_results(message, calls, entries):
            continue
        entry = _entry(message)
        last = entries[-1] if entries else None
        if (
            last is not None
            and entry.message_id is not None
            and last.message_id == entry.message_id
        ):
            last.text = "\n\n".join(text for text in (last.text, entry.text) if text)
            last.calls.extend(entry.calls)
        else:
            entries.append(entry)
        calls.update((call.id, call) for call in entry.calls if call.id)
    return entries


def tool_calls(messages: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """Every tool call, in order, with its result."""
    return [call for entry in read_entries(messages) for call in entry.calls]


def _only_results(
    message: Mapping[str, Any], calls: dict[str, ToolCall], entries: list[Entry]
) -> bool:
    """Attach the results `message` carries; True when it carries nothing else."""
    if message.get("role") == "tool":
        _attach(message.get("tool_call_id"), message.get("content"), None, calls, entries)
        return True
    content = message.get("content")
    if not isinstance(content, list):
        return False
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    for block in results:
        _attach(
            block.get("tool_use_id"), block.get("content"), block.get("is_error"), calls, entries
        )
    return bool(results) and len(results) == len(content)


def _attach(
    call_id: Any, content: Any, is_error: Any, calls: dict[str, ToolCall], entries: list[Entry]
) -> None:
    text = content_text(content)
    call = calls.get(call_id) if isinstance(call_id, str) else None
    if call is None:  # its call is not in the record (cut off before it, say): still shown
        entries.append(Entry("tool", text))
        return
    call.result = text
    call.failed = bool(is_error) or text.lstrip().startswith(TOOL_ERROR_PREFIX)


def _entry(message: Mapping[str, Any]) -> Entry:
    role = str(message.get("role") or message.get("type") or "unknown")
    describe = _DESCRIBE.get(role, lambda m: content_text(m.get("content")))
    message_id = message.get("message_id") if role == "assistant" else None
    return Entry(
        role,
        describe(message),
        _calls(message),
        sub_agent=bool(message.get("parent_tool_use_id")),
        message_id=message_id if isinstance(message_id, str) else None,
    )


def _calls(message: Mapping[str, Any]) -> list[ToolCall]:
    out = []
    for raw in message.get("tool_calls") or []:
        if isinstance(raw, dict):
            function = raw.get("function") if isinstance(raw.get("function"), dict) else raw
            name, arguments = str(function.get("name")), _arguments(function.get("arguments"))
            out.append(ToolCall(name, arguments, raw.get("id")))
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            out.append(
                ToolCall(str(block.get("name")), _arguments(block.get("input")), block.get("id"))
            )
    return out


def _arguments(raw: Any) -> dict[str, Any]:
    """Arguments as a mapping; text that is not a JSON object is kept under `arguments`."""
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw or "{}")
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    return {"arguments": raw}


def content_text(content: Any) -> str:
    """A message's or a result's content as text; tool blocks are left to `_calls`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(text for text in map(_block_text, content) if text)
    return json.dumps(content, ensure_ascii=False, default=str)


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return json.dumps(block, ensure_ascii=False, default=str)
    kind = block.get("type")
    if kind in ("tool_use", "tool_result"):
        return ""
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "thinking":
        return f"(thinking) {block.get('thinking') or ''}"
    if kind == "image":
        return "[image]"
    return json.dumps(block, ensure_ascii=False, default=str)


def _run_config_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    content = content if isinstance(content, dict) else {}
    config = content.get("config") if isinstance(content.get("config"), dict) else {}
    llm = config.get("llm") if isinstance(config.get("llm"), dict) else {}
    snapshot = content.get("snapshot_id")
    fields = {
        "agent role": content.get("agent_role"),
        "adapter": config.get("type"),
        "model": llm.get("model"),
        "snapshot": snapshot[:12] if isinstance(snapshot, str) else None,
    }
    return " · ".join(f"{key}: {value}" for key, value in fields.items() if value)


def _event_text(message: Mapping[str, Any]) -> str:
    # An event's data (the CLI's tool list, its session) says nothing about the task.
    return str(message.get("subtype") or message.get("type") or "event")


def _result_text(message: Mapping[str, Any]) -> str:
    fields = {
        "outcome": message.get("subtype"),
        "turns": message.get("num_turns"),
        "stop reason": message.get("stop_reason"),
        "error": "yes" if message.get("is_error") else None,
    }
    return " · ".join(f"{key}: {value}" for key, value in fields.items() if value is not None)


_DESCRIBE: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "run_config": _run_config_text,
    "event": _event_text,
    "result": _result_text,
}
