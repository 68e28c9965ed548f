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
parts, every string in them counted (a text part, a document's text, a search result's
content, a file's data) but images. Text elsewhere (a user message the harness writes its
output into) is not a tool result and is not cut: the model's context window bounds it.
"""

from __future__ import annotations

from typing import Any

FRAMING = 512
"""Characters a tool result may hold beyond the output limit, for its harness's framing."""
_MARKER = "\n[... {} characters cut by the gateway to the run's output limit ...]\n"
_MARKER_ROOM = 90
METADATA = frozenset({"type", "media_type", "id", "tool_use_id", "call_id", "cache_control"})
"""Keys of a tool result's parts that say what a part is, not what the tool printed."""
IMAGES = frozenset({"image", "image_url", "input_image"})
"""Part types left whole: an image cannot be cut and stay an image."""


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
    _find(request, kind, found)
    # A result with no content (Anthropic's `tool_result` may omit it) has nothing to cut:
    # looked up anyway, it was a gateway crash, and so an infrastructure fault a harness
    # could cause at will to buy its rollout a rerun.
    return [(holder, key) for holder, key in found if key in holder]


def _find(request: dict[str, Any], kind: str, found: list[tuple[dict, str]]) -> None:
    """The tool results of `request` as each API shapes them, added to `found`."""
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


def _clip_value(holder: dict, key: str, allowed: int) -> int:
    strings = _strings(holder, key)
    if sum(len(h[k]) for h, k in strings) <= allowed:
        return 0
    left = allowed  # the strings in order, until the allowance is spent; the rest emptied
    for place, name in strings:
        text = place[name]
        place[name] = text if len(text) <= left else _clip(text, left)
        left -= len(place[name])
    return 1


def _strings(holder: dict, key: str) -> list[tuple[Any, Any]]:
    """(container, key) of every string of `holder[key]` in document order, wherever it is
    nested (a text part, a document's `source.data`, a search result's `content`, a file's
    `file_data`): all of a tool result is the tool's output. Not counted: the `METADATA` keys,
    and image parts (`IMAGES`), which a cut would break."""
    found: list[tuple[Any, Any]] = []
    stack: list[tuple[Any, Any]] = [(holder, key)]
    while stack:
        place, name = stack.pop()
        value = place[name]
        if isinstance(value, str):
            found.append((place, name))
        elif isinstance(value, list):
            stack.extend((value, i) for i in reversed(range(len(value))))
        elif isinstance(value, dict) and not _image(value):
            keys = [k for k in value if k not in METADATA]
            stack.extend((value, k) for k in reversed(keys))
    return found


def _image(part: dict) -> bool:
    # A `type` JSON makes a list or an object cannot be looked up in a set: it was a gateway
    # crash, an infrastructure fault a harness could cause to buy a rerun (round 17).
    kind = part.get("type")
    return isinstance(kind, str) and kind in IMAGES


def _clip(text: str, allowed: int) -> str:
    """At most `allowed` characters: head and tail kept, the middle replaced by a marker."""
    if allowed < _MARKER_ROOM:
        return text[:allowed]
    room = allowed - _MARKER_ROOM
    head, tail = room // 2, room - room // 2
    return text[:head] + _MARKER.format(len(text) - room) + text[len(text) - tail :]


def _dicts(value: Any) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
