"""Redaction of everything the harness writes: the secrets it was given and common key shapes."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"
_KEY_SHAPES = re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}|(?<=Bearer )[A-Za-z0-9._\-]{16,}")


class Redactor:
    def __init__(self, secrets: list[str]) -> None:
        values = sorted({s for s in secrets if s and len(s) >= 8}, key=len, reverse=True)
        self._literal = re.compile("|".join(map(re.escape, values))) if values else None

    def text(self, text: str) -> str:
        if self._literal is not None:
            text = self._literal.sub(REDACTED, text)
        return _KEY_SHAPES.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value
