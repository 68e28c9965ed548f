"""`KeyMask`: the upstream key masked in what the gateway relays, whole or cut anywhere."""

from __future__ import annotations

from flashrsi_dagster.gateway.masking import KeyMask
from flashrsi_dagster.records.redaction import REDACTED

KEY = "sk-mask-5e4d3c2b1a"
TEXT = f'data: {{"content": "the key is {KEY}, and again {KEY}"}}\n\n'.encode()
MASKED = TEXT.replace(KEY.encode(), REDACTED.encode())


def test_a_whole_body_and_headers_have_the_key_masked():
    mask = KeyMask(KEY)

    assert mask.whole(TEXT) == MASKED
    assert mask.headers([("X-Echo", f"Bearer {KEY}"), ("A", "b")]) == [
        ("X-Echo", f"Bearer {REDACTED}"),
        ("A", "b"),
    ]


def test_a_stream_cut_anywhere_has_the_key_masked_and_nothing_else_changed():
    """Every cut of the stream into two reads, the key's included: what is sent, end to end,
    is the masked stream; a tail that only starts like the key is sent at the end."""
    for cut in range(len(TEXT) + 1):
        mask = KeyMask(KEY)
        sent = mask.feed(TEXT[:cut]) + mask.feed(TEXT[cut:]) + mask.end()
        assert sent == MASKED, cut
    mask = KeyMask(KEY)
    assert mask.feed(b"ends with sk-ma") == b"ends with "
    assert mask.end() == b"sk-ma"


def test_without_a_key_or_with_one_too_short_to_be_real_nothing_is_held_or_changed():
    """A key under the redactor's `MIN_SECRET_LENGTH` (a test's `"k"`) is no credential:
    masking it would mask every `k` of the answer."""
    for mask in (KeyMask(None), KeyMask("k")):
        assert mask.feed(b"sk-") == b"sk-" and mask.end() == b""
        assert mask.whole(TEXT) == TEXT
