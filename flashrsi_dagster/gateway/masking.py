"""The upstream key masked in everything an endpoint answers, before a client sees it.

The gateway sends the real key upstream and never gives it to an agent; but an endpoint can
put it in what it answers (a server that quotes the key it refused in an error's message, a
proxy that reflects request headers, a model answer that echoes them), and the gateway
relays answers. So every relayed header, whole body and stream has the key replaced by
`REDACTED`, and so has every fault cause built from an endpoint's words (it reaches the run's
accounts, hence the records).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from typing import NamedTuple

from flashrsi_dagster.records.redaction import MIN_SECRET_LENGTH, REDACTED

_MARK = REDACTED.encode()
MAX_CAUSE = 400
"""Characters of a fault's cause (the gateway's, Gate0's): the endpoint's words in it are
quoted so far."""


def spellings(char: str) -> list[str]:
    """`char`, one character of a key, as an endpoint may write it back: as it is,
    JSON-escaped (PHP's `json_encode` writes `/` as `\\/`), percent-encoded in a URL it
    quotes (hex in either case, `+` for a space). Per character, not per key: encoders
    differ in which characters they encode (Go's `PathEscape` keeps `+` and `=`, Python's
    `quote` keeps `/`, any may encode a letter), and a JSON-escaped URL mixes `\\/` with
    `%2B`. Longest first."""
    escaped = json.dumps(char)[1:-1]
    cases = [
        {
            f"%{byte:02X}",
            f"%{byte:02x}",
            f"%{byte >> 4:X}{byte & 15:x}",
            f"%{byte >> 4:x}{byte & 15:X}",
        }
        for byte in char.encode()
    ]
    forms = [char, escaped, *("".join(p) for p in itertools.product(*cases))]
    forms += ["\\/"] if char == "/" else ["+"] if char == " " else []
    return sorted(dict.fromkeys(forms), key=len, reverse=True)


class _Spelt(NamedTuple):
    """What a `KeyMask` matches one key with (compiled once per key: ~2 ms for a 160-character
    key, and a call made one mask or more)."""

    chars: list[list[bytes]]
    longest: int
    firsts: set[int]
    text_pattern: re.Pattern[str]
    pattern: re.Pattern[bytes]
    text_forms: tuple[str, str]


@functools.lru_cache(maxsize=32)
def _spelt(key: str) -> _Spelt:
    chars = [spellings(char) for char in key]
    # in any case: an endpoint may write the key back lower-cased (as HTTP/2 writes header
    # names), which leaves only its letters' case to try; no honest text holds a key's
    # characters in other letters. A stream's tail is compared in lower case.
    lowered = [list(dict.fromkeys(form.encode().lower() for form in forms)) for forms in chars]
    firsts = {first[0] for form in lowered[0] for first in (form[:1], form[:1].upper())}
    either = "".join("(?:" + "|".join(map(re.escape, forms)) + ")" for forms in chars)
    return _Spelt(
        chars=lowered,
        longest=sum(len(forms[0]) for forms in lowered),
        firsts=firsts,
        text_pattern=re.compile(either, re.IGNORECASE),
        pattern=re.compile(either.encode(), re.IGNORECASE),
        # as text, also as Python quotes it (`repr`: a key holding a line break or a
        # non-ASCII character is written escaped in an exception's words)
        text_forms=(repr(key)[1:-1], repr(key.encode())[2:-1]),
    )


class KeyMask:
    """Masks one key, each of its characters in any of its `spellings` and in any case, in
    a whole text or in a stream cut anywhere (a key split across two reads is held back
    until it is known whole or not)."""

    def __init__(self, key: str | None) -> None:
        # a key shorter than any real credential (a test's "k") would mask ordinary text
        self._spelt = _spelt(key) if key and len(key) >= MIN_SECRET_LENGTH else None
        self._held = b""

    def whole(self, data: bytes) -> bytes:
        return data if self._spelt is None else self._spelt.pattern.sub(_MARK, data)

    def text(self, text: str) -> str:
        """`text` with the key masked in each of its spellings, also as Python quotes it."""
        if self._spelt is None:
            return text
        for form in self._spelt.text_forms:
            text = text.replace(form, REDACTED)
        return self._spelt.text_pattern.sub(REDACTED, text)

    def quote(self, text: str) -> str:
        """`text`, words an endpoint sent, masked, then cut at `MAX_CAUSE` (after the mask: a
        key cut is no key to it): a 64 KB status line went whole to the accounts, the call
        log, the 502 and Gate0's problem."""
        text = self.text(text)
        return text if len(text) <= MAX_CAUSE else text[:MAX_CAUSE] + "..."

    def headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """`headers` with the key masked in their values; a header named with the key (in
        any case) is dropped: masked, its name would be no header name."""
        if self._spelt is None:
            return headers
        named = self._spelt.text_pattern.search
        kept = [(name, value) for name, value in headers if not named(name)]
        return [(name, self.text(value)) for name, value in kept]

    def feed(self, data: bytes) -> bytes:
        """What of the stream so far can be sent: masked, less a tail that may be the start
        of a key the next read completes."""
        if self._spelt is None:
            return data
        data, spelt, keep = self.whole(self._held + data), self._spelt, 0
        for start in range(max(0, len(data) - spelt.longest + 1), len(data)):
            # the earliest: the longest tail (a byte no spelling starts with, passed quickly)
            if data[start] in spelt.firsts and _starts(data[start:].lower(), spelt.chars):
                keep = len(data) - start
                break
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep]

    def end(self) -> bytes:
        """The tail held back, at the stream's end (it was no key)."""
        held, self._held = self._held, b""
        return held


def _starts(data: bytes, chars: list[list[bytes]]) -> bool:
    """Whether `data` is a proper start of the key spelt with `chars` (each character's
    spellings, both in lower case); walked without recursion (a key may be long)."""
    todo, seen = [(0, 0)], set()
    while todo:
        at, index = todo.pop()
        rest = data[at:]
        if index == len(chars) or (at, index) in seen:
            continue  # a whole key in `data` was masked already: no start of one
        seen.add((at, index))
        for form in chars[index]:
            if form.startswith(rest):
                return True
            if rest.startswith(form):
                todo.append((at + len(form), index + 1))
    return False
