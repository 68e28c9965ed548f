"""Known secret values in the simple encodings a file can carry them in.

A Worker that may not write a key in plain text could still write `base64(key)`; a snapshot
must hold neither. For every secret the needles are its bytes

* plain and reversed;
* hex, lower and upper case;
* percent-encoded: every byte, the bytes outside RFC 3986's unreserved set (what
  `urllib.parse.quote(safe="")` does), or only the reserved ones; hex digits upper and lower;
* base64, standard and URL-safe alphabets, at the three byte offsets (mod 3) the secret can
  have inside a longer blob. Only the stable middle of each is kept: the characters whose six
  bits all come from the secret, so padding, neighbouring bytes and the offset do not matter.

All needles are searched at once with one compiled alternation, built once per scanner.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(b":/?#[]@!$&'()*+,;=")
_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def needles(secret: bytes) -> dict[bytes, str]:
    """Every searchable form of `secret` -> the name of its encoding."""
    found: dict[bytes, str] = {secret: "plain"}
    for needle, encoding in [
        (secret[::-1], "reversed"),
        (secret.hex().encode(), "hex"),
        (secret.hex().upper().encode(), "hex"),
        *((needle, "URL encoding") for needle in _percent_forms(secret)),
        *((needle, "base64") for needle in _base64_middles(secret)),
    ]:
        found.setdefault(needle, encoding)
    return found


def _percent_forms(secret: bytes) -> list[bytes]:
    encoded: list[Callable[[int], bool]] = [
        lambda byte: True,
        lambda byte: byte not in _UNRESERVED,
        lambda byte: byte in _RESERVED,
    ]
    return [
        b"".join(
            (f"%{byte:02X}" if upper else f"%{byte:02x}").encode() if which(byte) else bytes([byte])
            for byte in secret
        )
        for which in encoded
        for upper in (True, False)
    ]


def _base64_middles(secret: bytes) -> list[bytes]:
    """Output character i covers bits [6i, 6i + 6); with `offset` bytes before it, the secret
    covers bits [8 offset, 8 (offset + n)), so characters ceil(8 offset / 6) up to (not
    including) floor(8 (offset + n) / 6) depend on the secret alone."""
    middles = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + secret)
        start, end = -(-8 * offset // 6), 8 * (offset + len(secret)) // 6
        middles += [encoded[start:end], encoded[start:end].translate(_URL_SAFE)]
    return middles


class SecretScanner:
    """Finds known secret values, plain or encoded, in bytes; names the encoding, never the
    value."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._encoding: dict[bytes, str] = {}
        for secret in secrets:
            for needle, encoding in needles(secret.encode("utf-8")).items():
                self._encoding.setdefault(needle, encoding)
        # Longest first, so the alternation reports (and replaces) the widest form.
        ordered = sorted(self._encoding, key=len, reverse=True)
        self._pattern = re.compile(b"|".join(map(re.escape, ordered))) if ordered else None

    def find(self, data: bytes) -> str | None:
        """The encoding of the first secret in `data` ("plain", "base64", …), or None."""
        match = self._pattern.search(data) if self._pattern is not None else None
        return self._encoding[match.group()] if match else None

    def sub(self, replacement: str, text: str) -> str:
        """`text` with every secret, plain or encoded, replaced (for paths and messages)."""
        if self._pattern is None:
            return text
        data = self._pattern.sub(replacement.encode(), text.encode("utf-8", "surrogateescape"))
        return data.decode("utf-8", "replace")
