"""Redaction: every record, trajectory, log line and Dagster event passes through a `Redactor`."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from flashrsi_dagster.records.encodings import SecretScanner

REDACTED = "[REDACTED]"

# Values shorter than this are not treated as secrets: redacting "1" or "true" everywhere would
# destroy ordinary text, and no real credential is that short.
MIN_SECRET_LENGTH = 8

_SECRET_ENV_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(_|$)", re.IGNORECASE
)

# Common credential shapes, redacted even when we were never told the value. A shape counts only
# as a whole token: it must not be preceded by a letter, digit, `-` or `_` and must end where the
# token ends, so `sk-` inside `task-classification-item-00` or `desk-0123…` is not a key.
_TOKEN_CHAR = r"A-Za-z0-9_\-"
_SHAPES = (
    r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}",
    r"AKIA[0-9A-Z]{16}",
    r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"github_pat_[A-Za-z0-9_]{30,}",
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",
    r"hf_[A-Za-z0-9]{30,}",
    r"AIza[0-9A-Za-z_\-]{35}",
    # The model gateway's per-run token (`gateway.grants.TOKEN_PREFIX`): a harness's hook or
    # command can print the variable holding it.
    r"frsi-gw-[A-Za-z0-9_\-]{16,}",
)
_KEY_SHAPES = re.compile(
    rf"(?<![{_TOKEN_CHAR}])(?:{'|'.join(_SHAPES)})(?![{_TOKEN_CHAR}])"
    # An HTTP bearer credential (RFC 6750 b64token): the whole token after the scheme.
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/\-]{16,}=*"
)

# See `is_identity_key`.
_IDENTITY_KEY = re.compile(
    r"(?:[a-z0-9]+_)*(?:ids?|paths?|dirs?)"
    r"|[a-z][a-zA-Z0-9]*(?:Ids?|Paths?|Dirs?)"
    r"|workdir|cwd|home|folder"
)


# Keys that name something, not credentials: Dagster's Docker executor hands each step
# container `DAGSTER_RUN_STEP_KEY=evaluation`, and redacting that value turned
# `swe_bench/evaluation.py` into `[REDACTED].py` in the evaluator's manifest.
_IDENTIFIER_KEY_NAME = re.compile(r"(^|_)(STEP|RUN|PARTITION|ASSET|CACHE|SORT)_KEY$", re.IGNORECASE)


def is_secret_env_name(name: str) -> bool:
    return bool(_SECRET_ENV_NAME.search(name)) and not _IDENTIFIER_KEY_NAME.search(name)


def looks_like_key(text: str) -> bool:
    """True when `text` contains a well-known credential shape (e.g. `sk-…`) as a whole token."""
    return bool(_KEY_SHAPES.search(text))


def is_identity_key(key: str) -> bool:
    """True for a field that names something rather than carrying text.

    Identity fields are task, snapshot, parent and run ids, paths and folders. Rewriting one
    breaks identity downstream (a task re-run because its id changed, a round whose scores no
    longer match its tasks), so `Redactor.value` applies key shapes to neither them nor mapping
    keys (field names, or ids such as scores keyed by task id); known secret values are still
    replaced. The set, matched on the whole key: `id`, `ids`, `path`, `paths`, `dir`, `dirs`
    alone or as a snake_case suffix (`task_id`, `snapshot_ids`, `data_path`, `files_dir`,
    `working_dir`), their camelCase forms (`taskId`, `filePath`), and `workdir`, `cwd`, `home`,
    `folder`.
    """
    return bool(_IDENTITY_KEY.fullmatch(key))


class Redactor:
    """Replaces known secret values, secret-named environment values and key shapes.

    Known values are replaced wherever they occur; key shapes only as whole tokens, and never
    in identity fields (see `is_identity_key`).

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
        self._values = tuple(sorted(values, key=len, reverse=True))
        self._literals = re.compile("|".join(map(re.escape, self._values))) if values else None

    @property
    def knows_secrets(self) -> bool:
        return self._literals is not None

    @cached_property
    def scanner(self) -> SecretScanner:
        """The known secret values in every simple encoding (base64, hex, …), built once."""
        return SecretScanner(self._values)

    def leaks(self, data: bytes) -> bool:
        """True when `data` holds a known secret value, plain or in a simple encoding (key
        shapes are not checked here: a harness may legitimately document what a key looks
        like)."""
        return self.scanner.find(data) is not None

    def text(self, text: str) -> str:
        return _KEY_SHAPES.sub(REDACTED, self._known(text))

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value.

        Known secret values are replaced everywhere, mapping keys included. Key shapes are
        replaced everywhere except in identity fields and mapping keys (see `is_identity_key`):
        an id or a path is never rewritten because it happens to look like a key.
        """
        return self._value(value, identity=False)

    def _value(self, value: Any, identity: bool) -> Any:
        if isinstance(value, str):
            return self._known(value) if identity else self.text(value)
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                named = isinstance(key, str)
                out[self._known(key) if named else key] = self._value(
                    item, named and is_identity_key(key)
                )
            return out
        if isinstance(value, list | tuple):
            # A list under an identity key (`task_ids`) holds identities too.
            return [self._value(item, identity) for item in value]
        return value

    def _known(self, text: str) -> str:
        return self._literals.sub(REDACTED, text) if self._literals is not None else text


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
