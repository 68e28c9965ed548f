"""Observation management: how a tool's output and errors become what the model sees.

Every tool bounds its output with `bound` (head and tail kept, the middle replaced by a marker
that says how much was cut), a mistake the model made reads `Error: <message>`, and the loop
hands each call's output back to the model as one `tool` message (`observation`).
"""

from __future__ import annotations

from typing import Any

_MARKER = "\n[... {} characters truncated ...]\n"
_MARKER_ROOM = 60  # characters kept free for the marker, whatever the count's width


def observation(call: dict[str, Any], output: str) -> dict[str, Any]:
    """Observation management: the message that shows the model one tool call's output."""
    return {"role": "tool", "tool_call_id": call["id"], "content": output}


def error_text(message: object) -> str:
    """Observation management: a failure the model caused, as the model reads it; the run
    goes on."""
    return f"Error: {message}"


def bound(text: str, limit: int, skipped: int = 0) -> str:
    """Observation management: at most `limit` characters, head and tail kept, the middle
    replaced by a marker.

    `skipped` counts characters already dropped from the middle before `text` was built.
    """
    if len(text) <= limit and not skipped:
        return text
    if limit < _MARKER_ROOM:
        return text[:limit]
    room = limit - _MARKER_ROOM
    head, tail = room // 2, room - room // 2
    dropped = len(text) - room + skipped
    return text[:head] + _MARKER.format(dropped) + text[len(text) - tail :]
