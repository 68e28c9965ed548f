"""Server-sent events: the framing shared by every streaming dialect."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Small pieces make clients exercise their delta accumulation, as real streams do.
PIECE_CHARS = 16


def sse(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def pieces(text: str) -> list[str]:
    return [text[i : i + PIECE_CHARS] for i in range(0, len(text), PIECE_CHARS)]
