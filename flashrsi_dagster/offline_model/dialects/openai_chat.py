"""OpenAI Chat Completions: `POST /v1/chat/completions`, with tool calls and SSE streaming."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from flashrsi_dagster.offline_model.conversation import (
    Conversation,
    Message,
    Reply,
    Tool,
    ToolCall,
    text_of,
)
from flashrsi_dagster.offline_model.dialects.base import (
    Turn,
    require_list,
    require_model,
    require_object,
)
from flashrsi_dagster.offline_model.dialects.errors import openai_error
from flashrsi_dagster.offline_model.dialects.sse import pieces, sse
from flashrsi_dagster.offline_model.errors import SimulatorError

api = "chat"
error_body = openai_error


def parse(body: Mapping[str, Any]) -> Conversation:
    model = require_model(body)
    system: list[str] = []
    messages: list[Message] = []
    for i, raw in enumerate(require_list(body, "messages")):
        item = require_object(raw, f"messages[{i}]")
        role, text = item.get("role"), text_of(item.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "user":
            messages.append(Message("user", text))
        elif role == "assistant":
            calls = tuple(_tool_call(call, i) for call in item.get("tool_calls") or ())
            messages.append(Message("assistant", text, calls))
        elif role in ("tool", "function"):
            call_id = item.get("tool_call_id") or item.get("name") or ""
            messages.append(Message("tool", text, call_id=call_id))
        else:
            raise SimulatorError(400, f"`messages[{i}].role` {role!r} is not a chat role")
    return Conversation(
        model=model,
        system="\n\n".join(system),
        messages=tuple(messages),
        tools=_tools(body),
        stream=bool(body.get("stream")),
    )


def parse_arguments(raw: Any) -> Mapping[str, Any]:
    """Tool-call arguments arrive as a JSON string; anything unparseable is kept as `_raw`."""
    if isinstance(raw, Mapping):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {"_raw": raw}
    return value if isinstance(value, Mapping) else {"_raw": raw}


def _tool_call(raw: Any, index: int) -> ToolCall:
    call = require_object(raw, f"messages[{index}].tool_calls[]")
    function = require_object(call.get("function"), f"messages[{index}].tool_calls[].function")
    arguments = parse_arguments(function.get("arguments"))
    return ToolCall(name=str(function.get("name", "")), arguments=arguments, id=call.get("id", ""))


def _tools(body: Mapping[str, Any]) -> tuple[Tool, ...]:
    functions = [t.get("function") for t in body.get("tools") or () if isinstance(t, Mapping)]
    functions += list(body.get("functions") or ())  # the legacy field
    return tuple(
        Tool(str(f.get("name", "")), f.get("description") or "", f.get("parameters") or {})
        for f in functions
        if isinstance(f, Mapping)
    )


def render(reply: Reply, turn: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if reply.text or not reply.tool_calls else None,
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [_wire_call(call) for call in reply.tool_calls]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
    return {**_head(turn, "chat.completion"), "choices": [choice], "usage": _usage(turn)}


def render_stream(reply: Reply, turn: Turn) -> Iterator[bytes]:
    options = turn.body.get("stream_options")
    with_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
    head = _head(turn, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        # With include_usage, every chunk carries `usage: null` until the last one.
        return sse({**head, "choices": [choice], **({"usage": None} if with_usage else {})})

    yield chunk({"role": "assistant", "content": ""})
    for piece in pieces(reply.text):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        opening = {**_wire_call(call), "index": index}
        opening["function"] = {"name": call.name, "arguments": ""}
        yield chunk({"tool_calls": [opening]})
        for piece in pieces(call.arguments_json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish(reply))
    if with_usage:
        yield sse({**head, "choices": [], "usage": _usage(turn)})
    yield sse("[DONE]")


def _head(turn: Turn, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-simulator-{turn.number}",
        "object": kind,
        "created": turn.created,
        "model": turn.model,
        "system_fingerprint": None,
    }


def _wire_call(call: ToolCall) -> dict[str, Any]:
    function = {"name": call.name, "arguments": call.arguments_json}
    return {"id": call.id, "type": "function", "function": function}


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(turn: Turn) -> dict[str, int]:
    return {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }
