"""Anthropic Messages: `POST /v1/messages` (with the exact SSE event sequence when streaming)."""

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
from flashrsi_dagster.offline_model.dialects.errors import anthropic_error
from flashrsi_dagster.offline_model.dialects.sse import pieces, sse
from flashrsi_dagster.offline_model.errors import SimulatorError

api = "anthropic"
error_body = anthropic_error


def parse(body: Mapping[str, Any]) -> Conversation:
    model = require_model(body)
    messages: list[Message] = []
    for i, raw in enumerate(require_list(body, "messages")):
        item = require_object(raw, f"messages[{i}]")
        role, content = item.get("role"), item.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise SimulatorError(400, f"`messages[{i}].content` must be a string or a list")
        if role == "user":
            messages += _user_turn(blocks)
        elif role == "assistant":
            messages.append(_assistant_turn(blocks))
        else:
            raise SimulatorError(400, f"`messages[{i}].role` must be `user` or `assistant`")
    tools = tuple(
        Tool(str(t.get("name", "")), t.get("description") or "", t.get("input_schema") or {})
        for t in body.get("tools") or ()
        if isinstance(t, Mapping)
    )
    return Conversation(
        model=model,
        system=text_of(body.get("system")),
        messages=tuple(messages),
        tools=tools,
        stream=bool(body.get("stream")),
    )


def _user_turn(blocks: list[Any]) -> list[Message]:
    """Tool results become `tool` messages; the remaining text one `user` message after them."""
    results, texts = [], []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "tool_result":
            call_id = str(block.get("tool_use_id", ""))
            results.append(Message("tool", text_of(block.get("content")), call_id=call_id))
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    text = "\n".join(texts)
    return results + ([Message("user", text)] if text or not results else [])


def _assistant_turn(blocks: list[Any]) -> Message:
    texts, calls = [], []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            arguments = block.get("input") if isinstance(block.get("input"), Mapping) else {}
            calls.append(ToolCall(str(block.get("name", "")), arguments, str(block.get("id", ""))))
    return Message("assistant", "\n".join(texts), tuple(calls))


def render(reply: Reply, turn: Turn) -> dict[str, Any]:
    return {
        **_message(turn),
        "content": _blocks(reply),
        "stop_reason": _stop_reason(reply),
        "usage": _usage(turn.input_tokens, turn.output_tokens),
    }


def render_stream(reply: Reply, turn: Turn) -> Iterator[bytes]:
    start = {**_message(turn), "content": [], "stop_reason": None}
    start["usage"] = _usage(turn.input_tokens, 0)
    yield _event("message_start", message=start)
    for index, block in enumerate(_blocks(reply)):
        yield from _stream_block(index, block)
    delta = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
    usage = {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens}
    yield _event("message_delta", delta=delta, usage=usage)
    yield _event("message_stop")


def _stream_block(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    """A block opens empty, grows by deltas (text, or pieces of the JSON input), then stops."""
    if block["type"] == "text":
        opening = {**block, "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
    else:
        opening = {**block, "input": {}}
        arguments = json.dumps(block["input"], ensure_ascii=False)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(arguments)]
    yield _event("content_block_start", index=index, content_block=opening)
    for delta in deltas:
        yield _event("content_block_delta", index=index, delta=delta)
    yield _event("content_block_stop", index=index)


def count_tokens_body(input_tokens: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens}


def _event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def _message(turn: Turn) -> dict[str, Any]:
    return {
        "id": f"msg_simulator_{turn.number}",
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "stop_sequence": None,
    }


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or not reply.tool_calls:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
        for call in reply.tool_calls
    ]
    return blocks


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
