"""The Trajectory: everything one rollout (or one Worker edit) produced, as one JSON record."""

from __future__ import annotations

import traceback
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_serializer,
    field_validator,
)

from flashrsi_dagster.records.json_values import from_json_value, to_json_value


class Status(StrEnum):
    SUCCESS = "success"
    """The agent finished and the verifier accepted its answer."""
    FAILURE = "failure"
    """The agent finished and the answer was wrong: the agent's own failure."""
    ERROR = "error"
    """The agent itself broke (exception, malformed output, turn limit)."""
    INFRA_ERROR = "infra_error"
    """The infrastructure failed (model endpoint, container, verifier); eligible for reruns."""
    TIMEOUT = "timeout"
    """The rollout hit its wall-clock limit and its processes were killed."""


Split = Literal["train", "dev", "test"]


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(0, ge=0, description="Prompt tokens over every model call.")
    output_tokens: int = Field(0, ge=0, description="Completion tokens over every model call.")
    cost: float | None = Field(None, ge=0, description="USD, or None when the model is unpriced.")
    turns: int = Field(0, ge=0, description="Model calls made by the agent loop.")
    tool_calls: int = Field(0, ge=0, description="Tool invocations the agent made.")
    model_calls: int | None = Field(
        None,
        ge=0,
        description="Model calls the gateway forwarded for the run, by its own count (`turns` "
        "is the harness's word, which evolvable code may change); None when no gateway metered "
        "the run (records from before it was counted).",
    )

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost, other.cost) if c is not None]
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost=sum(costs) if costs else None,
            turns=self.turns + other.turns,
            tool_calls=self.tool_calls + other.tool_calls,
            model_calls=None
            if self.model_calls is None or other.model_calls is None
            else self.model_calls + other.model_calls,
        )


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str = Field(description="Exception class name, e.g. `TimeoutError`.")
    message: str
    traceback: str | None = None

    @classmethod
    def from_exception(cls, exc: BaseException) -> Self:
        return cls(
            type=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback.format_exception(exc)),
        )


class Trajectory(BaseModel):
    """One rollout: the task, the snapshot it ran with, what happened and what it cost."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["trajectory"] = "trajectory"
    schema_version: Literal[1] = 1
    task_id: str
    split: Split | None = Field(None, description="None for Worker edits, which have no split.")
    snapshot_id: str
    attempt: int = Field(0, ge=0, description="0 for the first run; reruns count up.")
    status: Status
    answer: str | None = None
    score: float | None = Field(None, description="Primary metric; None when not scored.")
    messages: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    started: datetime = Field(default_factory=lambda: datetime.now(UTC))
    duration: float = Field(0.0, ge=0, description="Wall-clock seconds.")
    error: ErrorInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_serializer("messages", "metadata")
    def _json_safe(self, value: Any) -> Any:
        return to_json_value(value)

    @field_validator("messages", "metadata", mode="before")
    @classmethod
    def _restore(cls, value: Any, info: ValidationInfo) -> Any:
        # Only JSON input carries encoded values; Python input is taken as given.
        return from_json_value(value) if info.mode == "json" else value
