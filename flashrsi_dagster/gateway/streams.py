"""`StreamMeter`: checks an SSE stream and reads its usage as it is relayed, event by event."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from flashrsi_dagster.gateway.answers import (
    EndpointFault,
    endpoint_json,
    event_problem,
    usage_tokens,
)
from flashrsi_dagster.gateway.metering import Kind, Tokens, tokens_of, usage_of_event

MAX_EVENT = 4 << 20
"""Bytes of one event at most: a longer one (or a stream that never ends an event) is the
endpoint's fault."""
# A line's end then an empty line's; a CR with nothing after it yet may be a CRLF's start.
_BLANK_LINE = re.compile(rb"\r\n\r\n|\r\n\n|\n\r\n|\n\n|\r\r|\n\r(?=[^\n])")
_BOM = b"\xef\xbb\xbf"
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

    Every event must be UTF-8 text, its data a JSON object (or `[DONE]`) that every client
    reads alike (`endpoint_json`), and its usage counts; its fields are read as the SDKs read
    them (`_fields`, `_Fields.misread`): anything else raises `EndpointFault` before the event
    is relayed. An error the endpoint reports in the stream itself is relayed
    and kept in `reported`.
    """

    def __init__(self, kind: Kind, *, drop_usage_chunk: bool = False) -> None:
        self._kind = kind
        self._drop = drop_usage_chunk
        self._pending = b""
        self._held: list[bytes] = []
        self._usage: dict[str, Any] = {}
        self._fresh = True
        """Nothing read yet: a byte order mark may start the stream."""
        self._stopped = False
        """A `[DONE]` was read, where the OpenAI SDK stops reading."""
        self._last_id = False
        """An `id:` field was seen (the OpenAI SDK keeps it, and from then on reads every
        empty line as an event of no data)."""
        self.reported: str | None = None
        self.answering = 0
        """Events of the API's shape (`_ANSWERING`): a 2xx stream with none answered nothing."""
        self.closed = False
        """The closing event of a Responses or Messages stream was seen (their SDKs fail a
        stream without it), or a chat stream's `[DONE]` or a choice's `finish_reason`: a
        chat stream with neither was cut between two events, which a connection that ends
        the body by closing cannot tell from its end (the SDK would hand the harness half an
        answer as a whole one)."""

    @property
    def tokens(self) -> Tokens:
        """The usage seen so far (none at all: unknown)."""
        return tokens_of(self._kind, self._usage) if self._usage else Tokens(known=False)

    def feed(self, data: bytes) -> bytes:
        buffer = self._pending + data if self._pending else data
        if self._fresh:
            # The SSE spec drops one byte order mark at a stream's start, the SDKs do not:
            # the first line's field (`\ufeffdata`) was no field to them, its event lost.
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                self._pending = buffer
                return b""
            buffer, self._fresh = buffer.removeprefix(_BOM), False
        out: list[bytes] = []
        start = 0
        # What was pending held no event's end: the search starts where the new bytes do.
        ends = _EventEnds(buffer, max(0, len(self._pending) - 3))
        while (end := ends.after(start)) is not None:
            event = buffer[start:end]
            if self._keep(event):
                (self._held if self._held or _is_last(event) else out).append(event)
            start = end
        self._pending = buffer[start:]
        if len(self._pending) > MAX_EVENT:
            raise EndpointFault(f"a stream event over {MAX_EVENT} bytes")
        return b"".join(out)

    def check_end(self) -> None:
        """The stream ended: its last event (one without its blank line) checked and held,
        its blank line given (the SDKs drop an event the stream ends before it ends: the
        `finish_reason` or closing event the gateway read, the client never saw)."""
        rest, self._pending = self._pending, b""
        if rest.strip() and self._keep(rest):
            self._held.append(rest.rstrip(b"\r\n") + b"\n\n")

    def incomplete(self) -> str | None:
        """What a 2xx stream that has ended lacks to be an answer, or None."""
        if not self.answering:  # comments, unknown fields, bare text or other JSON
            return "a stream without one event of its API"
        if not self.closed and self.reported is None:
            if self._kind == "chat":
                return "a chat stream that ended without [DONE] or a finish_reason"
            return "a stream that ended without its closing event"
        return None

    def end(self) -> bytes:
        """What is left to relay when the stream has ended (after `check_end`)."""
        self.check_end()
        held, self._held = self._held, []
        return b"".join(held)

    def _keep(self, event: bytes) -> bool:
        try:  # any line of it: the SDKs decode every line (a comment too) as strict UTF-8
            event.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EndpointFault(f"a stream event that is not UTF-8 text ({exc.reason})") from None
        fields = self._fields(event)
        data = self._data_of(fields.data)
        if not isinstance(data, dict):
            # `[DONE]` ends a chat stream; the Responses and Messages SDKs need their event
            self.closed = self.closed or (fields.done and self._kind == "chat")
            self._stopped = self._stopped or (fields.done and self._kind != "messages")
            return True
        if (problem := fields.misread(self._kind, data)) is not None:
            raise EndpointFault(f"a stream event its SDK reads otherwise ({problem})")
        if (problem := event_problem(self._kind, data)) is not None:
            raise EndpointFault(f"a stream event of the wrong shape for its API ({problem})")
        self.answering += _ANSWERING[self._kind](data)
        # none after a `[DONE]`: the OpenAI SDK never reads it
        closing = str(data.get("type")).encode() in _LAST or _finished(data)
        self.closed = self.closed or (closing and not self._stopped)
        # `"error": null` is no error (a whole answer holding one is an answer too)
        if self.reported is None and (data.get("type") == "error" or data.get("error") is not None):
            self.reported = f"reported an error in its stream: {_error_of(data)}"
        elif self.reported is None and data.get("type") == "response.failed":
            # A Responses stream's failure carries its error in the response, as a whole
            # answer does (which is refused as "an error object in a 2xx answer").
            failed = data.get("response")
            error = _error_of(failed) if isinstance(failed, dict) else "no error object"
            self.reported = f"reported a failed response in its stream: {error}"
        # read from the parsed data: the key may be written escaped (`"\\u0075sage"`)
        usage = usage_of_event(self._kind, data)
        if usage is None:
            return True
        usage_tokens(self._kind, usage)  # odd counts raise
        self._usage.update({k: v for k, v in usage.items() if v is not None})
        return not (self._drop and data.get("choices") == [])

    def _fields(self, event: bytes) -> _Fields:
        """The event read line by line as the SSE clients read it (`_Fields`). One the
        OpenAI SDK parses as JSON though it holds no data is a fault: an `event:`, a
        `retry:` or a kept `id:` without `data`, or an empty line after an `id:` (the SDK
        keeps the last id, and then reads every empty line as an event)."""
        name, data, retry = None, None, False
        after_id, leading_blank = self._last_id, event[:1] in (b"\r", b"\n")
        for line in event.splitlines():
            if not line or line.startswith(b":"):
                continue
            field, _, value = line.partition(b":")
            value = value.removeprefix(b" ")
            if field == b"data":  # a bare `data` line is a data line too
                data = value if data is None else data + b"\n" + value
            elif field == b"event":
                name = value or None
            elif field == b"id" and b"\0" not in value:
                self._last_id = bool(value)
            elif field == b"retry":
                retry = retry or _integer(value)
        fields = _Fields(name, data)
        if self._kind == "messages":
            if data is None and name in _ROUTED:
                raise EndpointFault(f"a stream event {fields.named} without data")
            return fields
        if self._stopped:  # past `[DONE]`: the OpenAI SDK reads no more
            return fields
        if (data is None and (name or retry or self._last_id)) or (leading_blank and after_id):
            raise EndpointFault(
                "a stream event without data (an `event:`, `retry:` or `id:` field alone, or "
                "an empty line after an `id:`), which the OpenAI SDK parses as JSON and fails on"
            )
        return fields

    @staticmethod
    def _data_of(raw: bytes | None) -> Any:
        """The event's data as JSON; None for an event without data, or `[DONE]`."""
        if raw is None:
            return None
        if raw.startswith(b"[DONE]"):
            return None  # where the OpenAI SDK stops reading (a prefix: so does it)
        try:
            data = endpoint_json(raw)
        except ValueError as exc:
            raise EndpointFault(f"a stream event that is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise EndpointFault(f"a stream event that is a JSON {type(data).__name__}")
        return data


class _Fields(NamedTuple):
    """An event's name (its last `event:` field) and data (its `data` lines joined), as an
    SSE client reads them (one space after the colon dropped)."""

    name: bytes | None
    data: bytes | None

    @property
    def named(self) -> str:
        return repr(self.name[:40].decode(errors="replace")) if self.name else "without a name"

    @property
    def done(self) -> bool:
        return self.data is not None and self.data.startswith(b"[DONE]")

    def misread(self, kind: Kind, data: dict[str, Any]) -> str | None:
        """How the client's SDK reads the event otherwise than its data says, or None. The
        OpenAI SDK wraps an event named `thread.*` (its Assistants API) into another object;
        the Anthropic SDKs (Python's, Claude Code's) route an event by its name, never its
        data's `type`, and skip one they do not know."""
        if kind != "messages":
            if self.name is not None and self.name.startswith(b"thread."):
                return f"named {self.named}"
            return None
        kind_of = data.get("type")
        if self.name != (kind_of.encode() if isinstance(kind_of, str) else None):
            return f"named {self.named}, its data's type {str(kind_of)[:40]!r}"
        return None


class _EventEnds:
    """Where events end in one buffer: at a blank line, whatever ends its lines (SSE takes
    CRLF, LF and CR, mixed: `\n\r\n` is a line ended by LF, then an empty line ended by
    CRLF, which the OpenAI SDK reads as an event's end)."""

    def __init__(self, buffer: bytes, skip: int = 0) -> None:
        self._buffer = buffer
        self._skip = skip

    def after(self, start: int) -> int | None:
        """The index just past the blank line ending the event that starts at `start`."""
        found = _BLANK_LINE.search(self._buffer, max(start, self._skip))
        return found.end() if found else None


_ANSWERING = {
    "chat": lambda data: isinstance(data.get("choices"), list),
    "responses": lambda data: str(data.get("type")).startswith("response."),
    "messages": lambda data: str(data.get("type")).startswith(("message_", "content_block_")),
}
"""Whether an event's data is part of an answer of the API (a chat chunk, a Responses or a
Messages event), not an unrelated JSON object."""


_ROUTED = frozenset(
    {b"message_start", b"message_delta", b"message_stop", b"content_block_start",
     b"content_block_delta", b"content_block_stop", b"completion", b"error"}
)  # fmt: skip
"""Events the Anthropic SDKs parse, by their name (they skip others)."""


def _integer(value: bytes) -> bool:
    """Whether Python's `int` reads `value` as text, as the OpenAI SDK reads a `retry:` (any
    script's digits: `١٢` is 12)."""
    try:
        int(value.decode("utf-8"))
    except ValueError:
        return False
    return True


def _is_last(event: bytes) -> bool:
    for line in event.splitlines():
        if line.startswith(b"event:") and line[6:].strip() in _LAST:
            return True
        if line.startswith(b"data:") and line[5:].strip() == b"[DONE]":
            return True
    return False


def _finished(data: dict[str, Any]) -> bool:
    """A chat chunk whose choice says why the answer ended."""
    choices = data.get("choices")
    return isinstance(choices, list) and any(
        isinstance(c, dict) and c.get("finish_reason") is not None for c in choices
    )


def _error_of(data: dict[str, Any]) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        kind, message = error.get("type") or error.get("code"), error.get("message")
        return f"{str(kind)[:60]}: {str(message)[:200]}"
    return str(error)[:200]
