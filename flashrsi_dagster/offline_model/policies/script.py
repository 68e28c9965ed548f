"""Scripted replies: model `simulator/script:<name>` answers from a list, one reply per request.

Script format (a YAML or JSON list; each item one reply, used in order)::

    - text: "I will look around."
      tool_calls:
        - name: shell
          arguments: {command: "ls"}
    - text: "Done."
    - error: 500          # this request gets HTTP 500 instead of a reply
    - "plain strings are short for {text: ...}"

A reply needs at least one of `text`, `tool_calls`, `error`. Tool-call `arguments` is a mapping
(sent as a JSON string where the wire wants one); call ids are assigned by the server.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from flashrsi_dagster.bounded_yaml import safe_load
from flashrsi_dagster.offline_model.conversation import Conversation, Reply, ToolCall
from flashrsi_dagster.offline_model.errors import SimulatorError


class ScriptError(ValueError):
    """A script that cannot be loaded; the message names the file and the item."""


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Tool name, e.g. `shell`.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Tool arguments as a mapping, not a JSON string."
    )


class ScriptedReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, description="Assistant text.")
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    error: int | None = Field(
        None, ge=400, le=599, description="Answer this request with this HTTP error instead."
    )

    @model_validator(mode="after")
    def _says_something(self) -> Self:
        if self.text is None and not self.tool_calls and self.error is None:
            raise ValueError("a reply needs `text`, `tool_calls` or `error`")
        return self

    def to_reply(self) -> Reply:
        calls = tuple(ToolCall(call.name, call.arguments) for call in self.tool_calls)
        return Reply(text=self.text or "", tool_calls=calls)


def load_script(source: Path | str | Sequence[Any]) -> tuple[list[ScriptedReply], str]:
    """The validated replies of a script file (or an in-memory list), and where they came from."""
    if isinstance(source, Path | str):
        path = Path(source)
        try:
            items = safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"{path}: cannot read the script file: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ScriptError(f"{path}: not valid YAML or JSON: {exc}") from exc
        return validate_replies(items, str(path)), str(path)
    return validate_replies(source, "<inline script>"), "<inline script>"


def validate_replies(items: Any, origin: str) -> list[ScriptedReply]:
    if not isinstance(items, list):
        raise ScriptError(f"{origin}: expected a list of replies, got {type(items).__name__}")
    replies = []
    for index, item in enumerate(items):
        if isinstance(item, ScriptedReply):
            replies.append(item)
            continue
        try:
            replies.append(
                ScriptedReply.model_validate({"text": item} if isinstance(item, str) else item)
            )
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, error['loc'])) or 'reply'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ScriptError(f"{origin}: item {index}: {problems}") from None
    return replies


class Script:
    """A policy that hands out its replies in order, once each, across threads."""

    def __init__(self, name: str, replies: list[ScriptedReply], origin: str) -> None:
        self.name = name
        self.origin = origin
        self._replies = replies
        self._next = 0
        self._lock = threading.Lock()

    def __call__(self, conversation: Conversation) -> Reply:
        with self._lock:
            index = self._next
            if index >= len(self._replies):
                raise SimulatorError(
                    400,
                    f"simulator script {self.name!r} ({self.origin}) is exhausted: it had "
                    f"{len(self._replies)} replies and all were used",
                )
            self._next += 1
        scripted = self._replies[index]
        if scripted.error is not None:
            raise SimulatorError(
                scripted.error,
                f"simulator script {self.name!r} reply {index} injects HTTP {scripted.error}",
            )
        return scripted.to_reply()
