"""`CallLog`: one redacted JSON line per request, appended and flushed as the request ends.

No bodies, no keys, no tokens (a short token id instead). Three guards, in order: the fields
are chosen so none should hold a secret; every real key and anything shaped like a token is
replaced; then the project's `Redactor` runs over the line.

Gateways of several processes (candidates of one round side by side, on one machine or on
several sharing the home) append to one experiment's log: each line goes out in one `write`
under an exclusive `flock` of the file, so lines never interleave or tear (NFS's O_APPEND
alone does not promise that). Under the same lock each gateway reads what the others
appended since it last looked, and keeps its calls in flight where they see them
(`shared.py`): a role's caps count every process's calls.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from flashrsi_dagster.gateway.grants import TOKEN_PREFIX
from flashrsi_dagster.gateway.shared import SharedSpend
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
    candidate: str | None = None
    """The candidate the host granted the run for (`Grant.candidate`), never the agent's word."""
    token_id: str | None = None
    model: str | None = None
    stream: bool = False
    status: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    duration_ms: float = 0.0
    error: str | None = None
    fault: str | None = None
    """`endpoint` or `gateway` when the call failed on the infrastructure's side (`error`
    says how); None for an answer or for the agent's own mistake (a refusal)."""
    usage_unknown: bool = False
    """An answer that reported no usage: its tokens count 0 and its cost is unknown."""


class CallLog:
    def __init__(self, path: Path | None, redactor: Redactor | None) -> None:
        self._path = path
        self._redactor = redactor or Redactor(environ={})
        self._keys: tuple[str, ...] = ()  # longest first: a key holding another goes whole
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._shared: SharedSpend | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = open_own(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            self._shared = SharedSpend(path)
            with self.locked():  # what earlier processes spent counts from the start
                self._shared.sweep()

    @contextmanager
    def locked(self) -> Iterator[SharedSpend | None]:
        """The log's lock (across threads, processes and hosts), with the other gateways'
        spends read up to now; None: no log, nothing is shared."""
        with self._lock:
            if self._fd is None or self._shared is None:
                yield None
                return
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                self._shared.read(self._fd)
                yield self._shared
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def add_key(self, key: str | None) -> None:
        if key:
            with self._lock:
                self._keys = tuple(sorted({*self._keys, key}, key=len, reverse=True))

    def write(self, record: CallRecord, *, held: int = 0) -> None:
        """Append the record; `held`: tokens the call reserved (see `SharedSpend.hold`),
        released as its line goes in."""
        if self._fd is None:
            return
        fields = asdict(record)
        fields["model"] = _cut(record.model)
        fields["error"] = _cut(record.error, 1000)
        fields = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), **fields}
        scrubbed = {k: self._scrub(v) if isinstance(v, str) else v for k, v in fields.items()}
        data = (self._redactor.text(json.dumps(scrubbed, ensure_ascii=False)) + "\n").encode()
        with self.locked() as shared:
            if shared is None:
                return
            if not shared.clean_end:  # a writer crashed mid-line: this line starts afresh
                data = b"\n" + data
            try:
                _append(self._fd, data)
                shared.appended(len(data))
            finally:
                shared.release((record.experiment or "", record.role or ""), held)

    def close(self) -> None:
        with self._lock:
            if self._shared is not None:
                self._shared.close()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _scrub(self, text: str) -> str:
        for key in self._keys:
            text = text.replace(key, REDACTED)
        return _TOKEN_SHAPE.sub(REDACTED, text)


def _append(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _cut(text: str | None, limit: int = MAX_FIELD) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit] + "..."
