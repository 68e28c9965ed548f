"""`CallLog`: one redacted JSON line per request, appended and flushed as the request ends.

No bodies, no keys, no tokens (a short token id instead). Three guards, in order: the fields
are chosen so none should hold a secret; every real key and anything shaped like a token is
replaced; then the project's `Redactor` runs over the line.

Gateways of several processes (candidates of one round side by side, on one machine or on
several sharing the home) append to one experiment's log: each line goes out in one `write`
under an exclusive `flock` of the file, so lines never interleave or tear (NFS's O_APPEND
alone does not promise that).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from flashrsi_dagster.gateway.grants import TOKEN_PREFIX
from flashrsi_dagster.gateway.metering import Tokens, Usage
from flashrsi_dagster.records.atomic import open_own
from flashrsi_dagster.records.redaction import REDACTED, Redactor

_TOKEN_SHAPE = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_\-]*")
# Text a client controls (the model name) is cut short: a log line is not a place to store data.
MAX_FIELD = 200


@dataclass
class CallRecord:
    """One request as logged (filled in as it is served)."""

    method: str
    path: str
    experiment: str | None = None
    role: str | None = None
    run_id: str | None = None
    token_id: str | None = None
    model: str | None = None
    stream: bool = False
    status: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    duration_ms: float = 0.0
    error: str | None = None


class CallLog:
    def __init__(self, path: Path | None, redactor: Redactor | None) -> None:
        self._path = path
        self._redactor = redactor or Redactor(environ={})
        self._keys: tuple[str, ...] = ()  # longest first: a key holding another goes whole
        self._lock = threading.Lock()
        self._fd: int | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    def add_key(self, key: str | None) -> None:
        if key:
            with self._lock:
                self._keys = tuple(sorted({*self._keys, key}, key=len, reverse=True))

    def write(self, record: CallRecord) -> None:
        if self._fd is None:
            return
        fields = asdict(record)
        fields["model"] = _cut(record.model)
        fields["error"] = _cut(record.error, 1000)
        fields = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), **fields}
        scrubbed = {k: self._scrub(v) if isinstance(v, str) else v for k, v in fields.items()}
        line = self._redactor.text(json.dumps(scrubbed, ensure_ascii=False))
        with self._lock:
            if self._fd is not None:
                _append_locked(self._fd, (line + "\n").encode("utf-8"))

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _scrub(self, text: str) -> str:
        for key in self._keys:
            text = text.replace(key, REDACTED)
        return _TOKEN_SHAPE.sub(REDACTED, text)


def _append_locked(fd: int, data: bytes) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _cut(text: str | None, limit: int = MAX_FIELD) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit] + "..."


def logged_usage(path: Path) -> dict[tuple[str, str], Usage]:
    """What each (experiment, role) used according to an existing call log: the calls of
    earlier processes, so that a role's cap holds across a resume. Unreadable lines (a torn
    last line after a crash) are skipped."""
    totals: dict[tuple[str, str], Usage] = {}
    try:
        with os.fdopen(open_own(path, os.O_RDONLY), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return totals
    for line in lines:
        try:
            call = json.loads(line)
            key = (call["experiment"], call["role"])
            tokens = Tokens(int(call["input_tokens"]), int(call["output_tokens"]))
        except (ValueError, KeyError, TypeError):
            continue
        if key[0] is None or call.get("status") is None or not (tokens.input or tokens.output):
            continue
        totals.setdefault(key, Usage()).add(tokens, call.get("cost_usd"))
    return totals
