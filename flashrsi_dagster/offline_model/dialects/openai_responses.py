"""OpenAI Responses: `POST /v1/responses`, with function calls and SSE streaming.

Custom (freeform) tools — `{"type": "custom", "name": ..., "format": ...}`, as the Codex CLI
declares `apply_patch` — are called with one free text, not JSON arguments: a policy's call
of one puts that text in `arguments["input"]`, and it goes out as a `custom_tool_call` item.
Tools grouped in a `namespace` tool are offered under their own names.
"""

from __future__ import annotations

import itertools
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
    require_model,
    require_object,
)
from flashrsi_dagster.offline_model.dialects.errors import openai_error
from flashrsi_dagster.offline_model.dialects.openai_chat import parse_arguments
from flashrsi_dagster.offline_model.dialects.sse import pieces, sse
from flashrsi_dagster.offline_model.errors import SimulatorError

api = "responses"
error_body = openai_error


def parse(body: Mapping[str, Any]) -> Conversation:
    model = require_model(body)
    instructions = body.get("instructions")
    system = [instructions] if isinstance(instructions, str) and instructions else []
    raw = body.get("input")
    if isinstance(raw, str):
        messages = [Message("user", raw)]
    elif isinstance(raw, list):
        messages = []
        for i, item in enumerate(raw):
            _add_item(require_object(item, f"input[{i}]"), system, messages)
    else:
        raise SimulatorError(400, "`input` is required: a string or a list of items")
    return Conversation(
        model=model,
        system="\n\n".join(system),
        messages=tuple(messages),
        tools=_tools(body),
        stream=bool(body.get("stream")),
    )


def _add_item(item: Mapping[str, Any], system: list[str], messages: list[Message]) -> None:
    kind = item.get("type") or ("message" if "role" in item else None)
    if kind == "message":
        role, text = item.get("role"), text_of(item.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role in ("user", "assistant"):
            messages.append(Message(role, text))
        else:
            raise SimulatorError(400, f"input message role {role!r} is not a Responses role")
    elif kind == "function_call":
        call = ToolCall(
            name=str(item.get("name", "")),
            arguments=parse_arguments(item.get("arguments")),
            id=str(item.get("call_id", "")),
        )
        messages.append(Message("assistant", tool_calls=(call,)))
    elif kind == "custom_tool_call":
        call = ToolCall(
            name=str(item.get("name", "")),
            arguments={"input": str(item.get("input", ""))},
            id=str(item.get("call_id", "")),
        )
        messages.append(Message("assistant", tool_calls=(call,)))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = text_of(item.get("output"))
        messages.append(Message("tool", output, call_id=str(item.get("call_id", ""))))
    # Reasoning items and other item types carry nothing a simulator policy reads.


def _tools(body: Mapping[str, Any]) -> tuple[Tool, ...]:
    return tuple(_declared(body.get("tools") or ()))


def _declared(tools: Any) -> Iterator[Tool]:
    """Function and custom tools, those inside namespaces included; hosted tools (web
    search, tool search) are the provider's own and no policy calls them."""
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        kind, name = tool.get("type"), str(tool.get("name", ""))
        if kind == "function":
            yield Tool(name, tool.get("description") or "", tool.get("parameters") or {})
        elif kind == "custom":
            yield Tool(name, tool.get("description") or "", freeform=True)
        elif kind == "namespace":
            yield from _declared(tool.get("tools"))


def render(reply: Reply, turn: Turn) -> dict[str, Any]:
    return _response(turn, "completed", [_done(item) for item in _items(reply, turn)])


def render_stream(reply: Reply, turn: Turn) -> Iterator[bytes]:
    number = itertools.count()

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(number), **fields}, event=kind)

    yield event("response.created", response=_response(turn, "in_progress", []))
    yield event("response.in_progress", response=_response(turn, "in_progress", []))
    items = _items(reply, turn)
    for index, item in enumerate(items):
        yield event("response.output_item.added", output_index=index, item=item)
        if item["type"] == "message":
            yield from _stream_text(event, item, index)
        elif item["type"] == "custom_tool_call":
            yield from _stream_input(event, item, index)
        else:
            yield from _stream_arguments(event, item, index)
        yield event("response.output_item.done", output_index=index, item=_done(item))
    done = [_done(item) for item in items]
    yield event("response.completed", response=_response(turn, "completed", done))


def _stream_text(event, item: dict[str, Any], index: int) -> Iterator[bytes]:
    text = item["text"]
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    yield event("response.content_part.added", **where, part=_text_part(""))
    for piece in pieces(text):
        yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
    yield event("response.output_text.done", **where, text=text, logprobs=[])
    yield event("response.content_part.done", **where, part=_text_part(text))


def _stream_arguments(event, item: dict[str, Any], index: int) -> Iterator[bytes]:
    where = {"item_id": item["id"], "output_index": index}
    for piece in pieces(item["arguments"]):
        yield event("response.function_call_arguments.delta", **where, delta=piece)
    yield event(
        "response.function_call_arguments.done",
        **where,
        name=item["name"],
        arguments=item["arguments"],
    )


def _stream_input(event, item: dict[str, Any], index: int) -> Iterator[bytes]:
    where = {"item_id": item["id"], "output_index": index}
    for piece in pieces(item["input"]):
        yield event("response.custom_tool_call_input.delta", **where, delta=piece)
    yield event("response.custom_tool_call_input.done", **where, input=item["input"])


def _items(reply: Reply, turn: Turn) -> list[dict[str, Any]]:
    """Output items as first announced while streaming (`in_progress`, nothing generated yet).

    A message item keeps its full text under a private `text` key until `_done` renders it.
    """
    items: list[dict[str, Any]] = []
    if reply.text or not reply.tool_calls:
        message_id = f"msg_simulator_{turn.number}"
        items.append(_message(message_id, "in_progress", []) | {"text": reply.text})
    freeform = {tool.name for tool in _tools(turn.body) if tool.freeform}
    for call in reply.tool_calls:
        number = call.id.removeprefix("call_")
        if call.name in freeform:
            text = call.arguments.get("input")
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": "ctc_" + number,
                    "call_id": call.id,
                    "name": call.name,
                    "input": text if isinstance(text, str) else call.arguments_json,
                    "status": "in_progress",
                }
            )
            continue
        items.append(
            {
                "type": "function_call",
                "id": "fc_" + number,
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments_json,
                "status": "in_progress",
            }
        )
    return items


def _done(item: dict[str, Any]) -> dict[str, Any]:
    if item["type"] == "message":
        return _message(item["id"], "completed", [_text_part(item["text"])])
    return {**item, "status": "completed"}


def _message(message_id: str, status: str, content: list[Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": message_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _response(turn: Turn, status: str, output: list[Any]) -> dict[str, Any]:
    body = turn.body
    usage = {
        "input_tokens": turn.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": turn.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }
    return {
        "id": f"resp_simulator_{turn.number}",
        "object": "response",
        "created_at": turn.created,
        "status": status,
        "model": turn.model,
        "output": output,
        "usage": usage if status == "completed" else None,
        "instructions": body.get("instructions"),
        "tools": body.get("tools") or [],
        "tool_choice": body.get("tool_choice", "auto"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "metadata": body.get("metadata") or {},
        "text": {"format": {"type": "text"}},
        "error": None,
        "incomplete_details": None,
    }
