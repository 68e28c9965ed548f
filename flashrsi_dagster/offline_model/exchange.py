"""One HTTP exchange, without the socket: what the simulator receives and what it answers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    """As received, query string included."""
    headers: Mapping[str, str]
    """Names lower-cased."""
    body: bytes = b""


@dataclass(frozen=True)
class HttpResponse:
    status: int | None
    """None: send nothing and close the connection (a `hang` fault)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: tuple[bytes, ...] | None = None
    """A streamed body: sent with chunked transfer encoding, one write per chunk."""

    @classmethod
    def json(
        cls, status: int, data: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> HttpResponse:
        body = json.dumps(data, ensure_ascii=False).encode()
        return cls(status, {"Content-Type": "application/json", **(headers or {})}, body)

    @classmethod
    def event_stream(cls, chunks: Iterable[bytes]) -> HttpResponse:
        headers = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        return cls(200, headers, chunks=tuple(chunks))
