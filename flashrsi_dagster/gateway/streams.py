"""`StreamMeter`: reads the usage out of an SSE stream as it is relayed, event by event."""

from __future__ import annotations

import json
from typing import Any

from flashrsi_dagster.gateway.metering import Kind, Tokens, tokens_of, usage_of_event

# An event this long without its blank line is not SSE worth metering: it is relayed as it is.
MAX_PENDING = 4 << 20
_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")
# The events that close a stream (the usage has been seen by then).
_LAST = frozenset(
    {b"message_stop", b"response.completed", b"response.incomplete", b"response.failed"}
)


class StreamMeter:
    """Fed the upstream's bytes, returns the complete events to relay (a partial one waits for
    its end, so an event is never split by the gateway) and keeps the latest usage seen.

    The closing event (`[DONE]`, `message_stop`, `response.completed`) and whatever follows it
    are held until `end()`: the gateway records the usage before the client can see the call
    end, so a run revoked as soon as its agent has its answer is never short of that call.

    `drop_usage_chunk`: the gateway asked a chat stream for usage the client did not ask for
    (`stream_options.include_usage`), so the final usage-only chunk is taken out again.
    """

    def __init__(self, kind: Kind, *, drop_usage_chunk: bool = False) -> None:
        self._kind = kind
        self._drop = drop_usage_chunk
        self._pending = b""
        self._held: list[bytes] = []
        self._usage: dict[str, Any] = {}

    @property
    def tokens(self) -> Tokens:
        return tokens_of(self._kind, self._usage)

    def feed(self, data: bytes) -> bytes:
        buffer = self._pending + data if self._pending else data
        out: list[bytes] = []
        start = 0
        ends = _EventEnds(buffer)
        while (end := ends.after(start)) is not None:
            event = buffer[start:end]
            if self._keep(event):
                (self._held if self._held or _is_last(event) else out).append(event)
            start = end
        self._pending = buffer[start:]
        if len(self._pending) > MAX_PENDING:
            out.append(self._pending)
            self._pending = b""
        return b"".join(out)

    def end(self) -> bytes:
        """What is left when the stream ends: a last event without its blank line."""
        rest, self._pending = self._pending, b""
        held, self._held = self._held, []
        if rest and self._keep(rest):
            held.append(rest)
        return b"".join(held)

    def _keep(self, event: bytes) -> bool:
        if b'"usage"' not in event:  # most events: no JSON parsing at all
            return True
        data = _data_of(event)
        usage = usage_of_event(self._kind, data)
        if usage is None:
            return True
        self._usage.update({k: v for k, v in usage.items() if v is not None})
        return not (self._drop and isinstance(data, dict) and data.get("choices") == [])


class _EventEnds:
    """Where events end in one buffer. Each terminator's next position is remembered, so a
    style the stream does not use is searched for once per buffer, not once per event."""

    def __init__(self, buffer: bytes) -> None:
        self._buffer = buffer
        self._next: dict[bytes, int | None] = dict.fromkeys(_ENDS)  # None: not searched yet

    def after(self, start: int) -> int | None:
        """The index just past the blank line ending the event that starts at `start`."""
        best = None
        for terminator, found in self._next.items():
            if found is None or 0 <= found < start:
                found = self._buffer.find(terminator, start)
                self._next[terminator] = found  # -1: absent from here on
            if found >= 0 and (best is None or found + len(terminator) < best):
                best = found + len(terminator)
        return best


def _is_last(event: bytes) -> bool:
    for line in event.splitlines():
        if line.startswith(b"event:") and line[6:].strip() in _LAST:
            return True
        if line.startswith(b"data:") and line[5:].strip() == b"[DONE]":
            return True
    return False


def _data_of(event: bytes) -> Any:
    lines = [
        line[5:].removeprefix(b" ") for line in event.splitlines() if line.startswith(b"data:")
    ]
    try:
        return json.loads(b"\n".join(lines))
    except (ValueError, UnicodeDecodeError):
        return None
