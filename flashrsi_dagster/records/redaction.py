"""Redaction: every record, trajectory, log line and Dagster event passes through a `Redactor`."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

# Values shorter than this are not treated as secrets: redacting "1" or "true" everywhere would
# destroy ordinary text, and no real credential is that short.
MIN_SECRET_LENGTH = 8

_SECRET_ENV_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(_|$)", re.IGNORECASE
)

# Common credential shapes, redacted even when we were never told the value.
_KEY_SHAPES = re.compile(
    r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|AIza[0-9A-Za-z_\-]{35}"
    r"|(?<=Bearer )[A-Za-z0-9._\-]{16,}"
)


def is_secret_env_name(name: str) -> bool:
    return bool(_SECRET_ENV_NAME.search(name))


def looks_like_key(text: str) -> bool:
    """True when `text` contains a well-known credential shape (e.g. `sk-…`)."""
    return bool(_KEY_SHAPES.search(text))


class Redactor:
    """Replaces known secret values, secret-named environment values and key shapes.

    `secrets` are the resolved values of every `${ENV_VAR}` the config references; the
    environment is read when the redactor is built, never at import time.
    """

    def __init__(
        self, secrets: Iterable[str] = (), *, environ: Mapping[str, str] | None = None
    ) -> None:
        environ = os.environ if environ is None else environ
        values = {value for value in secrets if value and len(value) >= MIN_SECRET_LENGTH}
        values |= {
            value
            for name, value in environ.items()
            if is_secret_env_name(name) and len(value) >= MIN_SECRET_LENGTH
        }
        # Longest first, so a secret that contains another one is replaced whole.
        ordered = sorted(values, key=len, reverse=True)
        self._literals = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @property
    def knows_secrets(self) -> bool:
        return self._literals is not None

    def leaks(self, data: bytes) -> bool:
        """True when `data` holds a known secret value (key shapes are not checked here: a
        harness may legitimately document what a key looks like)."""
        if self._literals is None:
            return False
        return self._literals.search(data.decode("utf-8", errors="replace")) is not None

    def text(self, text: str) -> str:
        if self._literals is not None:
            text = self._literals.sub(REDACTED, text)
        return _KEY_SHAPES.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dict keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.value(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the formatted message before any handler sees it."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._redactor.text(record.getMessage())
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = self._redactor.text(formatted)
            record.exc_info = None
        return True
