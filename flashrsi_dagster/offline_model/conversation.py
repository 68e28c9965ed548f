"""The neutral form of a request and its answer, shared by every dialect and policy.

Dialects parse their wire format into a `Conversation` and render a `Reply` back; policies only
ever see these types, so one policy serves Chat Completions, Responses and Anthropic Messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class Message:
    """One turn. System text is not a message: it lives in `Conversation.system`."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str = ""
    """For a `tool` message: the id of the call it answers."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    freeform: bool = False
    """A Responses `custom` tool: its call carries one free text, `arguments["input"]`."""


@dataclass(frozen=True)
class Conversation:
    model: str
    system: str = ""
    messages: tuple[Message, ...] = ()
    tools: tuple[Tool, ...] = ()
    stream: bool = False

    def tool_names(self) -> set[str]:
        return {tool.name for tool in self.tools}

    def user_texts(self) -> list[str]:
        return [m.text for m in self.messages if m.role == "user" and m.text]

    def last_user_text(self) -> str:
        texts = self.user_texts()
        return texts[-1] if texts else ""

    def tool_calls(self) -> list[ToolCall]:
        return [call for m in self.messages if m.role == "assistant" for call in m.tool_calls]

    def tool_results(self) -> list[str]:
        return [m.text for m in self.messages if m.role == "tool"]

    def exchanges(self) -> list[tuple[ToolCall, str | None]]:
        """Every tool call made so far with its result (None while the result is missing)."""
        results = {m.call_id: m.text for m in self.messages if m.role == "tool"}
        return [(call, results.get(call.id)) for call in self.tool_calls()]


@dataclass(frozen=True)
class Reply:
    """What a policy answers: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


def number_tool_calls(reply: Reply, conversation: Conversation) -> Reply:
    """Give the reply's tool calls ids `call_<n>`, counting on from the calls already made.

    Derived from the conversation rather than a server counter, so the same conversation always
    gets the same ids and ids never repeat within one conversation.
    """
    start = len(conversation.tool_calls()) + 1
    calls = tuple(replace(call, id=f"call_{start + i}") for i, call in enumerate(reply.tool_calls))
    return replace(reply, tool_calls=calls)


def text_of(content: Any) -> str:
    """The text in a content field: a string, or a list of parts/blocks carrying `text`.

    Images and other non-text parts contribute nothing; nested `content` (tool results holding
    blocks) is followed.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        if isinstance(content.get("text"), str):
            return content["text"]
        return text_of(content.get("content"))
    if isinstance(content, list):
        return "\n".join(text for text in map(text_of, content) if text)
    return ""
