"""Chat Completions messages and tools, translated to the Responses and Anthropic shapes."""

from __future__ import annotations

import json
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def to_responses_input(messages: list[dict]) -> tuple[str, list[dict]]:
    instructions: list[str] = []
    items: list[dict] = []
    for message in messages:
        role = message["role"]
        if role in ("system", "developer"):
            instructions.append(_text(message.get("content")))
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": _text(message.get("content")),
                }
            )
        else:
            if message.get("content"):
                items.append({"role": role, "content": _text(message["content"])})
            for call in message.get("tool_calls") or []:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    }
                )
    return "\n\n".join(instructions), items


def to_responses_tools(tools: list[dict]) -> list[dict]:
    return [{"type": "function", **tool["function"]} for tool in tools]


def to_anthropic_tools(tools: list[dict]) -> list[dict]:
    return [
        {
            "name": f["name"],
            "description": f.get("description", ""),
            "input_schema": f.get("parameters") or {"type": "object", "properties": {}},
        }
        for f in (tool["function"] for tool in tools)
    ]


def to_anthropic_messages(messages: list[dict]) -> tuple[str, list[dict]]:
    system: list[str] = []
    turns: list[dict] = []
    for message in messages:
        role = message["role"]
        if role in ("system", "developer"):
            system.append(_text(message.get("content")))
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": _text(message.get("content")),
            }
            _append(turns, "user", block)
            continue
        if message.get("content"):
            _append(turns, role, {"type": "text", "text": _text(message["content"])})
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"] or "{}")
            _append(
                turns,
                "assistant",
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "input": arguments,
                },
            )
    return "\n\n".join(system), turns


def _append(turns: list[dict], role: str, block: dict) -> None:
    """Anthropic wants alternating roles: consecutive blocks of one role share a turn."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].append(block)
    else:
        turns.append({"role": role, "content": [block]})
