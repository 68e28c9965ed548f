"""What tools share: the protocol, the error convention, schemas on disk, bounded output."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol

from runtime.context import Context

DESCRIPTIONS = Path(__file__).parent / "descriptions"
_MARKER = "\n[... {} characters truncated ...]\n"
_MARKER_ROOM = 60  # characters kept free for the marker, whatever the count's width


class Tool(Protocol):
    name: str
    schema: dict[str, Any]
    """OpenAI function-tool schema: {"name", "description", "parameters"}."""

    def run(self, arguments: dict[str, Any], ctx: Context) -> str: ...


class ToolError(Exception):
    """A failure the model caused; the model sees `Error: <message>` and the run goes on."""


class BaseTool(ABC):
    """Loads the schema and turns the model's mistakes into `Error:` text instead of raising."""

    name: str

    def __init__(self) -> None:
        self.schema = load_schema(self.name)

    def run(self, arguments: dict[str, Any], ctx: Context) -> str:
        if not isinstance(arguments, dict):
            return f"Error: arguments must be a JSON object, got {type(arguments).__name__}"
        try:
            return self._run(arguments, ctx)
        except ToolError as exc:
            return f"Error: {exc}"
        except OSError as exc:  # permissions, missing folders, full disk: still the task's data
            return f"Error: {exc}"

    @abstractmethod
    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        """The tool's work; raise `ToolError` for a mistake the model should read about."""


def load_schema(name: str) -> dict[str, Any]:
    return json.loads((DESCRIPTIONS / f"{name}.json").read_text(encoding="utf-8"))


def bound(text: str, limit: int, skipped: int = 0) -> str:
    """At most `limit` characters: head and tail kept, the middle replaced by a marker.

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


def string_arg(arguments: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = arguments.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ToolError(
            f"{key!r} must be a string" + (" (it is required)" if value is None else "")
        )
    return value


def int_arg(arguments: dict[str, Any], key: str) -> int:
    value = arguments.get(key)
    if isinstance(value, float) and value.is_integer():  # some models send 3.0 for 3
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{key!r} must be an integer")
    return value
