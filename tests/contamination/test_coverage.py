"""The coverage rule's measure (`contamination/coverage.py`) as a specification: what makes a
stretch of bytes opaque, and what accounts for it. The attacks are in
`tests/sabotage/test_coverage.py` and `test_coverage_attacks.py`."""

from __future__ import annotations

import random

from flashrsi_dagster.contamination.coverage import WINDOW, opaque

NOISE = random.Random(64).randbytes(4 * WINDOW)
"""Bytes that look compressed or encrypted: nearly every window holds 50 or more values."""


def test_text_in_any_script_is_never_opaque():
    text = "Ünïcödé, 中文的文本, текст, نص, 🙂 and plain ASCII code = [1, 2, 3]\n" * 40

    assert opaque(text.encode(), []) is None
    assert opaque(text.encode("utf-16-le"), []) is None


def test_noise_between_zeros_is_opaque_where_it_lies():
    data = bytes(1000) + NOISE + bytes(1000)

    at, length = opaque(data, [])

    assert 1000 - WINDOW <= at <= 1000 and length >= len(NOISE) - WINDOW


def test_noise_a_reading_consumed_is_accounted_for_wherever_it_lies():
    data = bytes(1000) + NOISE + bytes(1000)

    assert opaque(data, [NOISE]) is None


def test_an_empty_consumed_piece_accounts_for_nothing():
    """An empty piece is found at every offset: it must neither loop nor account."""
    data = bytes(1000) + NOISE

    assert opaque(data, [b""]) is not None
