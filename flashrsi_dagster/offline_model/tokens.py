"""Deterministic token estimates: ceil(characters / 4), the same numbers in `usage` and the log.

No tokenizer is involved; the point is stable, plausible counts for budgets and benchmarks.
"""

from __future__ import annotations

import json
import math

from flashrsi_dagster.offline_model.conversation import Conversation, Reply, ToolCall

CHARS_PER_TOKEN = 4


def estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def input_tokens(conversation: Conversation) -> int:
    """Over all request text: system, messages, tool calls and results, and tool definitions."""
    parts = [conversation.system]
    for message in conversation.messages:
        parts.append(message.text)
        parts.extend(_call_text(call) for call in message.tool_calls)
    for tool in conversation.tools:
        parts += [tool.name, tool.description, json.dumps(tool.parameters, sort_keys=True)]
    return estimate("".join(parts))


def output_tokens(reply: Reply) -> int:
    return estimate(reply.text + "".join(_call_text(call) for call in reply.tool_calls))


def _call_text(call: ToolCall) -> str:
    return call.name + call.arguments_json
