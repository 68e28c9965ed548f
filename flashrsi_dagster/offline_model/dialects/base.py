"""What a dialect is: parse a request body into a `Conversation`, render a `Reply` back."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.errors import SimulatorError


@dataclass(frozen=True)
class Turn:
    """Everything a dialect needs besides the reply to render one answer."""

    model: str
    number: int
    """The request's sequence number on this server: makes response ids unique."""
    created: int
    """Unix seconds."""
    input_tokens: int
    output_tokens: int
    body: Mapping[str, Any]
    """The request body, for dialect options such as `stream_options`."""


class Dialect(Protocol):
    api: str

    def parse(self, body: Mapping[str, Any]) -> Conversation: ...

    def render(self, reply: Reply, turn: Turn) -> dict[str, Any]: ...

    def render_stream(self, reply: Reply, turn: Turn) -> Iterator[bytes]: ...

    def error_body(self, status: int, message: str) -> dict[str, Any]: ...


def require_model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise SimulatorError(400, "`model` is required and must be a non-empty string")
    return model


def require_list(body: Mapping[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if not isinstance(value, list):
        raise SimulatorError(400, f"`{key}` is required and must be a list")
    return value


def require_object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SimulatorError(400, f"`{where}` must be an object")
    return value
