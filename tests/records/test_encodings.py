"""Known secrets are found plain and in simple encodings, anywhere in a longer blob."""

from __future__ import annotations

import base64
import random
import urllib.parse

import pytest

from flashrsi_dagster.records import REDACTED
from flashrsi_dagster.records.encodings import SecretScanner

SECRET = "canary-7f3b9e21c4d5a6b8-do-not-leak"
# Reserved characters, so that "percent-encode only the reserved ones" differs from the rest.
PUNCTUATED = "p@ss:w/rd+key=0123;ok"


def _noise(size: int, seed: int) -> bytes:
    return bytes(random.Random(seed).randrange(256) for _ in range(size))


def _base64_forms(data: bytes) -> dict[str, bytes]:
    standard, url_safe = base64.b64encode(data), base64.urlsafe_b64encode(data)
    return {
        "standard": standard,
        "standard-unpadded": standard.rstrip(b"="),
        "url-safe": url_safe,
        "url-safe-unpadded": url_safe.rstrip(b"="),
    }


@pytest.mark.parametrize("offset", range(7))
@pytest.mark.parametrize("form", list(_base64_forms(b"")))
def test_base64_is_found_at_any_byte_offset_inside_a_longer_blob(offset, form):
    scanner = SecretScanner([SECRET])
    blob = _noise(offset, offset) + SECRET.encode() + _noise(11, 99)

    assert scanner.find(_base64_forms(blob)[form]) == "base64"
    assert scanner.find(b"data:" + _base64_forms(SECRET.encode())[form] + b"\n") == "base64"


@pytest.mark.parametrize(
    ("encode", "encoding"),
    [
        (lambda s: s, "plain"),
        (lambda s: s[::-1], "reversed"),
        (lambda s: s.encode().hex(), "hex"),
        (lambda s: s.encode().hex().upper(), "hex"),
        (lambda s: "".join(f"%{b:02X}" for b in s.encode()), "URL encoding"),
        (lambda s: "".join(f"%{b:02x}" for b in s.encode()), "URL encoding"),
        (lambda s: urllib.parse.quote(s, safe=""), "URL encoding"),
        (lambda s: urllib.parse.quote(s, safe="").lower(), "URL encoding"),
    ],
    ids=[
        "plain",
        "reversed",
        "hex",
        "HEX",
        "url-every-byte",
        "url-every-byte-lower",
        "url-quote",
        "url-quote-lower",
    ],
)
@pytest.mark.parametrize("secret", [SECRET, PUNCTUATED], ids=["plain-chars", "punctuated"])
def test_hex_reversed_and_url_encodings_are_found(encode, encoding, secret):
    scanner = SecretScanner([secret])

    found = scanner.find(f"config = '{encode(secret)}' # trailing text".encode())

    # A form identical to the plain or URL one for this secret reports the first encoding.
    assert found == encoding or (found, encode(secret)) == ("plain", secret)


def test_only_the_reserved_characters_percent_encoded_is_found():
    reserved_only = "".join(
        f"%{ord(c):02X}" if c in ":/?#[]@!$&'()*+,;=" else c for c in PUNCTUATED
    )

    assert SecretScanner([PUNCTUATED]).find(reserved_only.encode()) == "URL encoding"


def test_other_values_and_their_encodings_are_not_findings():
    scanner = SecretScanner([SECRET])
    other = "canary-0000000000000000-other-value"
    texts = [
        other.encode(),
        base64.b64encode(other.encode()),
        other.encode().hex().encode(),
        base64.b64encode(_noise(4096, 1)),
        _noise(4096, 2),
        b"task-classification-item-00 risk-assessment-0123456789abcdef",
    ]

    assert [scanner.find(text) for text in texts] == [None] * len(texts)


def test_sub_replaces_every_form_and_a_scanner_without_secrets_finds_nothing():
    scanner = SecretScanner([SECRET])
    encoded = base64.b64encode(SECRET.encode()).decode()

    scrubbed = scanner.sub(REDACTED, f"a {encoded} b {SECRET[::-1]} c {SECRET}")

    assert scrubbed.count(REDACTED) == 3
    assert scanner.find(scrubbed.encode()) is None
    assert SecretScanner([]).find(SECRET.encode()) is None
    assert SecretScanner([]).sub(REDACTED, SECRET) == SECRET
