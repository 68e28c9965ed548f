"""The upstream key masked in everything an endpoint answers, before a client sees it.

The gateway sends the real key upstream and never gives it to an agent; but an endpoint can
put it in what it answers (a server that quotes the key it refused in an error's message, a
proxy that reflects request headers, a model answer that echoes them), and the gateway
relays answers. So every relayed header, whole body and stream has the key replaced by
`REDACTED`, and so has every fault cause built from an endpoint's words (it reaches the run's
accounts, hence the records).
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, quote_plus

from flashrsi_dagster.records.redaction import MIN_SECRET_LENGTH, REDACTED

_MARK = REDACTED.encode()


def spellings(key: str) -> list[str]:
    """`key` as an endpoint may write it back: as it is, JSON-escaped (PHP's `json_encode`
    writes `/` as `\\/`), percent-encoded (upper or lower hex, `+` for a space) in a URL it
    quotes. A base64 key (`/`, `+`, `=`) differs in each; longest first, so that no shorter
    spelling is masked inside a longer one."""
    escaped = json.dumps(key)[1:-1]
    # each with `/` encoded or kept: `quote`'s default and a path's encoders keep it
    encoded = [quote(key, safe=safe) for safe in ("", "/")]
    encoded += [quote_plus(key, safe=safe) for safe in ("", "/")]
    lower = [re.sub("%[0-9A-F]{2}", lambda hexa: hexa.group().lower(), form) for form in encoded]
    forms = [key, escaped, escaped.replace("/", "\\/"), *encoded, *lower]
    return sorted(dict.fromkeys(forms), key=len, reverse=True)


class KeyMask:
    """Masks one key, in each of its `spellings`, in a whole text or in a stream cut
    anywhere (a key split across two reads is held back until it is known whole or not)."""

    def __init__(self, key: str | None) -> None:
        # a key shorter than any real credential (a test's "k") would mask ordinary text
        self._key = key.encode() if key and len(key) >= MIN_SECRET_LENGTH else b""
        self._forms = [form.encode() for form in spellings(key)] if self._key else []
        # hex in either case, even mixed within one key (`%2f…%2B`): an endpoint's choice
        either = b"|".join(_hex_either(form) for form in self._forms)
        self._pattern, self._text_pattern = re.compile(either), re.compile(either.decode())
        # as text, also as Python quotes it (`repr`: a key holding a line break or a
        # non-ASCII character is written escaped in an exception's words)
        quoted = (repr(key)[1:-1], repr(self._key)[2:-1]) if self._key else ()
        self._text_forms = list(dict.fromkeys((*(f.decode() for f in self._forms), *quoted)))
        self._held = b""

    def whole(self, data: bytes) -> bytes:
        return self._pattern.sub(_MARK, data) if self._forms else data

    def text(self, text: str) -> str:
        """`text` with the key masked in each of its spellings, also as Python quotes it."""
        if not self._key:
            return text
        for form in self._text_forms:
            text = text.replace(form, REDACTED)
        return self._text_pattern.sub(REDACTED, text)  # the hex escapes in either case

    def headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(name, self.text(value)) for name, value in headers]

    def feed(self, data: bytes) -> bytes:
        """What of the stream so far can be sent: masked, less a tail that may be the start
        of a key the next read completes."""
        if not self._key:
            return data
        data = self.whole(self._held + data)
        # compared in lower case (hex escapes in either case): a tail that only looks like a
        # key's start is held one read longer, never lost (`whole` masks exactly)
        tail = data[max(0, len(data) - len(self._forms[0])) :].lower()
        keep = max(_partial_tail(tail, form.lower()) for form in self._forms)
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep]

    def end(self) -> bytes:
        """The tail held back, at the stream's end (it was no key)."""
        held, self._held = self._held, b""
        return held


def _hex_either(form: bytes) -> bytes:
    """A pattern of `form` whose `%XX` escapes match in upper or lower hex."""
    parts = re.split(rb"(%[0-9A-Fa-f]{2})", form)
    return b"".join(
        b"%" + b"".join(b"[%c%c]" % (c, c ^ 0x20) if c > 0x40 else bytes([c]) for c in part[1:])
        if index % 2
        else re.escape(part)
        for index, part in enumerate(parts)
    )


def _partial_tail(data: bytes, key: bytes) -> int:
    """The length of the longest end of `data` that is a proper start of `key`."""
    for size in range(min(len(key) - 1, len(data)), 0, -1):
        if data.endswith(key[:size]):
            return size
    return 0
