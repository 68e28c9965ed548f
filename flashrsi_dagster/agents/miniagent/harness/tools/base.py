"""What tools share: the protocol, the error convention and schemas on disk. How their output
and errors read to the model (`bound`, `error_text`) is `runtime/tool_result.py`'s."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol

from runtime.context import Context
from runtime.tool_result import error_text

DESCRIPTIONS = Path(__file__).parent / "descriptions"


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
            return error_text(f"arguments must be a JSON object, got {type(arguments).__name__}")
        try:
            return self._run(arguments, ctx)
        except ToolError as exc:
            return error_text(exc)
        except OSError as exc:  # permissions, missing folders, full disk: still the task's data
            return error_text(exc)

    @abstractmethod
    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        """The tool's work; raise `ToolError` for a mistake the model should read about."""


def load_schema(name: str) -> dict[str, Any]:
    return json.loads((DESCRIPTIONS / f"{name}.json").read_text(encoding="utf-8"))


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
