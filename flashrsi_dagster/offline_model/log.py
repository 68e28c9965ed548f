"""The request log: one `RequestRecord` per request the simulator answered (or held)."""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.offline_model.config import FaultKind

logger = logging.getLogger("flashrsi.offline_model")

Api = Literal["chat", "responses", "anthropic", "count_tokens", "models", "web", "unknown"]


class RequestRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    time: datetime = Field(description="When the request arrived (UTC).")
    api: Api = Field(description="Which endpoint: a model dialect, a helper, or `unknown`.")
    model: str | None = Field(None, description="The request's `model`, when it had one.")
    role: str | None = Field(None, description="The `x-flashrsi-role` header, when present.")
    stream: bool = False
    input_tokens: int = Field(0, ge=0, description="Estimate, as reported in `usage`.")
    output_tokens: int = Field(0, ge=0, description="Estimate, as reported in `usage`.")
    status_code: int | None = Field(
        None, description="HTTP status sent; None when the connection was closed unanswered."
    )
    fault: FaultKind | None = Field(None, description="The injected fault, if any.")
    duration: float = Field(0.0, ge=0, description="Seconds from arrival to the answer.")
    body: dict[str, Any] | None = Field(
        None, description="The request's JSON body, with `ServerConfig(record_bodies=True)`."
    )


class RequestLog:
    """Thread-safe, in-memory, append-only (until cleared); also logs one line per request."""

    def __init__(self) -> None:
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)
        logger.info(
            "simulator %s model=%s role=%s stream=%s status=%s tokens=%d/%d fault=%s %.3fs",
            record.api,
            record.model,
            record.role,
            record.stream,
            record.status_code,
            record.input_tokens,
            record.output_tokens,
            record.fault,
            record.duration,
        )

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
