"""The output limit, held by the gateway: every tool result a run sends its model is cut to the
run's protected output limit, whatever the harness did.

A harness bounds its tools' output itself, but it is evolvable code; the gateway sees every
request, so the model never reads more of one tool result than the limit allows. A result is
cut rather than the request refused: an over-long result is the harness's mistake, and a
refusal would end the run on it, while a cut keeps the run what an honest harness's would be.
A tool result may carry `FRAMING` characters more than the limit (an exit status line, a
truncation marker), so that an honest harness's results pass untouched.

The shapes cut: Chat Completions `tool` (and legacy `function`) messages; Responses
`*_call_output` input items; Anthropic `tool_result` blocks; each as a string or a list of
text parts. Text elsewhere (a user message the harness writes its output into) is not a tool
result and is not cut: the model's context window bounds it.
"""

from __future__ import annotations

from typing import Any

FRAMING = 512
"""Characters a tool result may hold beyond the output limit, for its harness's framing."""
_MARKER = "\n[... {} characters cut by the gateway to the run's output limit ...]\n"
_MARKER_ROOM = 90


def clip_tool_results(request: dict[str, Any], kind: str, limit: int) -> int:
    """Cut every tool result of `request` (a model call of route `kind`) longer than `limit`
    + `FRAMING` characters, in place; returns how many were cut."""
    allowed = limit + FRAMING
    cut = 0
    for holder, key in _results(request, kind):
        cut += _clip_value(holder, key, allowed)
    return cut


def _results(request: dict[str, Any], kind: str) -> list[tuple[dict, str]]:
    """(object, key) pairs whose value is a tool result's content (a string or a list)."""
    found: list[tuple[dict, str]] = []
    if kind == "chat":
        for message in _dicts(request.get("messages")):
            if message.get("role") in ("tool", "function"):
                found.append((message, "content"))
    elif kind == "responses":
        for item in _dicts(request.get("input")):
            kind_of = item.get("type")
            if isinstance(kind_of, str) and kind_of.endswith("_call_output"):
                found.append((item, "output"))
    elif kind == "messages":
        for message in _dicts(request.get("messages")):
            for block in _dicts(message.get("content")):
                if block.get("type") == "tool_result":
                    found.append((block, "content"))
    return found


def _clip_value(holder: dict, key: str, allowed: int) -> int:
    value = holder.get(key)
    if isinstance(value, str):
        if len(value) <= allowed:
            return 0
        holder[key] = _clip(value, allowed)
        return 1
    parts = [p for p in _dicts(value) if isinstance(p.get("text"), str)]
    if sum(len(p["text"]) for p in parts) <= allowed:
        return 0
    left = allowed  # the parts in order, until the allowance is spent; the rest emptied
    for part in parts:
        text = part["text"]
        part["text"] = text if len(text) <= left else _clip(text, left)
        left -= len(part["text"])
    return 1


def _clip(text: str, allowed: int) -> str:
    """At most `allowed` characters: head and tail kept, the middle replaced by a marker."""
    if allowed < _MARKER_ROOM:
        return text[:allowed]
    room = allowed - _MARKER_ROOM
    head, tail = room // 2, room - room // 2
    return text[:head] + _MARKER.format(len(text) - room) + text[len(text) - tail :]


def _dicts(value: Any) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
