"""The SDK's messages as JSON-able dicts, and what a trajectory needs from them."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.llm.usage import cost_of
from flashrsi_dagster.records import Usage

SYNTHETIC_MODEL = "<synthetic>"
"""The author the CLI gives the assistant messages it makes up itself, e.g. for API errors."""

# `total_cost_usd` and `costUSD` use Anthropic list prices whatever the endpoint: misleading
# next to the cost computed from the role's own price, so they are left out.
_LIST_PRICE_FIELDS = {"total_cost_usd", "costUSD"}
# Cached prompt tokens are prompt tokens too; the Anthropic API reports them separately.
_SESSION_INPUT = ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
_CALL_INPUT = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class Transcript:
    """Everything one session said, in order, with the pieces a trajectory is built from."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.results: list[ResultMessage] = []
        self.subagents: dict[str, dict[str, Any]] = {}
        """Per spawning `Agent` tool-use id: description, type, status and replies."""
        self._assistant: list[AssistantMessage] = []

    def prompt(self, instruction: str) -> None:
        """The task as sent: the SDK does not echo the prompt back."""
        self.messages.append(
            {"type": "user", "role": "user", "content": instruction, "parent_tool_use_id": None}
        )

    def add(self, message: Any) -> None:
        self.messages.append(to_dict(message))
        if isinstance(message, ResultMessage):
            self.results.append(message)
        elif isinstance(message, AssistantMessage):
            self._assistant.append(message)
            if message.parent_tool_use_id and (texts := _texts(message)):
                self._subagent(message.parent_tool_use_id)["replies"].extend(texts)
        elif isinstance(message, TaskStartedMessage) and message.tool_use_id:
            if message.data.get("subagent_type") or message.task_type == "local_agent":
                entry = self._subagent(message.tool_use_id)
                entry["description"] = message.description
                entry["subagent_type"] = message.data.get("subagent_type")
        elif isinstance(message, TaskNotificationMessage) and message.tool_use_id in self.subagents:
            entry = self.subagents[message.tool_use_id]
            entry["status"], entry["summary"] = message.status, message.summary

    @property
    def last_result(self) -> ResultMessage | None:
        """The session's last result: a session waiting for background sub-agents has several."""
        return self.results[-1] if self.results else None

    def answer(self) -> str | None:
        last = self.last_result
        if last is not None and not last.is_error and last.result is not None:
            return last.result
        for message in reversed(self._main()):
            if texts := _texts(message):
                return "\n".join(texts)
        return None

    def usage(self, price: PriceConfig | None) -> Usage:
        tokens_in, tokens_out = self._tokens()
        turns = sum(r.num_turns for r in self.results)
        return Usage(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost=cost_of(price, tokens_in, tokens_out),
            turns=turns or len({m.message_id for m in self._main()}),
            tool_calls=sum(
                isinstance(block, ToolUseBlock) for m in self._assistant for block in m.content
            ),
        )

    def _tokens(self) -> tuple[int, int]:
        """Session totals. A result's `model_usage` is cumulative and counts sub-agents; its
        `usage` covers only the main loop since the previous result; a run cut short has only
        the per-call usage of its assistant messages."""
        last = self.last_result
        if last is not None and last.model_usage:
            per_model = list(last.model_usage.values())
            return _sum(per_model, *_SESSION_INPUT), _sum(per_model, "outputTokens")
        if self.results:
            usages = [r.usage or {} for r in self.results]
        else:
            calls = {m.message_id: m.usage or {} for m in self._assistant if _real(m)}
            usages = list(calls.values())
        return _sum(usages, *_CALL_INPUT), _sum(usages, "output_tokens")

    def _main(self) -> list[AssistantMessage]:
        return [m for m in self._assistant if m.parent_tool_use_id is None and _real(m)]

    def _subagent(self, tool_use_id: str) -> dict[str, Any]:
        return self.subagents.setdefault(
            tool_use_id,
            {"description": None, "subagent_type": None, "status": None, "replies": []},
        )


def _sum(usages: list[Any], *keys: str) -> int:
    return sum(usage.get(key) or 0 for usage in usages for key in keys)


def _real(message: AssistantMessage) -> bool:
    return message.model != SYNTHETIC_MODEL


def _texts(message: AssistantMessage) -> list[str]:
    return [block.text for block in message.content if isinstance(block, TextBlock)]


def to_dict(message: Any) -> dict[str, Any]:
    """One SDK message as a dict with `type` and `role` (`assistant`, `user`, `event` for the
    CLI's system events, `result`); content blocks keep their wire `type`."""
    if isinstance(message, AssistantMessage):
        return {
            "type": "assistant",
            "role": "assistant",
            "content": [block_dict(block) for block in message.content],
            "model": message.model,
            "parent_tool_use_id": message.parent_tool_use_id,
            "message_id": message.message_id,
            "error": message.error,
        }
    if isinstance(message, UserMessage):
        content = message.content
        return {
            "type": "user",
            "role": "user",
            "content": content if isinstance(content, str) else [block_dict(b) for b in content],
            "parent_tool_use_id": message.parent_tool_use_id,
        }
    if isinstance(message, SystemMessage):
        return {"type": "system", "role": "event", "subtype": message.subtype, "data": message.data}
    if isinstance(message, ResultMessage):
        return {"type": "result", "role": "result", **_without_list_prices(_fields(message))}
    return {"type": _snake(type(message).__name__), "role": "event", **_fields(message)}


def block_dict(block: Any) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):  # the signature is opaque and large
        return {"type": "thinking", "thinking": block.thinking}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": block.content,
            "is_error": block.is_error,
        }
    return {"type": _snake(type(block).__name__).removesuffix("_block"), **_fields(block)}


def _fields(value: Any) -> dict[str, Any]:
    """A dataclass's fields: the result's, and those of types this module does not know yet."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return {"repr": repr(value)}


def _without_list_prices(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_list_prices(v) for k, v in value.items() if k not in _LIST_PRICE_FIELDS}
    return value


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
