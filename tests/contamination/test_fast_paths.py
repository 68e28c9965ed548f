"""The content check's fast paths read what the slow ones read: each is compared with the
one-at-a-time computation it replaced (issue 22 follow-up: an honest 3 MB binary took 20-30 s
to search), on texts made to hold what could tell them apart, and the search still finds a
table wherever the hashing cuts a text into chunks."""

from __future__ import annotations

import codecs
import gzip
import random
from urllib.parse import unquote

import pytest

from flashrsi_dagster.contamination import windows
from flashrsi_dagster.contamination.decode import _rot13, _unquote
from flashrsi_dagster.contamination.detector import (
    _A85_TOKEN,
    _B64_TOKEN,
    _B85_TOKEN,
    _HEX_TOKEN,
    _with_tokens,
)
from flashrsi_dagster.contamination.index import GRAM
from flashrsi_dagster.contamination.normalise import (
    _DROPPED,
    _DROPPED_BUT_NEWLINE,
    _NOT_ALNUM,
    _NOT_ALNUM_BUT_NEWLINE,
    FORMS,
    in_form,
)
from flashrsi_dagster.contamination.windows import Keys
from tests.contamination.test_detector import (
    BENCHMARK,
    SPLITS,
    TABLE,
    TASKS,
    ContentCheck,
    Harness,
    append,
    rejected,
)
from tests.sabotage.test_round15 import _binary

TRICKY = [
    *"aAeE \t'\"`\\+,()[]\x00_-.:é",
    *("\u0301", "\u0308", "\u3099", "\u0345", "\u1e9b\u0323"),  # marks that compose
    *("\u1100", "\u1161", "\u11a8", "\uac00"),  # Hangul jamo, composed by NFKC
    *("\ufb01", "\u00df", "\u0130", "\u03a3", "\u2460", "ﾊﾟ"),  # fold or decompose to several
    *("\u200b", "\u00ad", "\ufffd", "\xa0", "\u3000", "\x85", "\u2028", "\r", "\x0c"),
    *("\U000e0041", "\U000e0020", "\ud800"),  # tag characters, a lone surrogate
]


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Harness:
    return Harness(tmp_path_factory.mktemp("fast"), ContentCheck(BENCHMARK, lambda: TASKS, SPLITS))


def _lines(rng: random.Random) -> list[str]:
    return [
        "".join(rng.choice(TRICKY) for _ in range(rng.randrange(8)))
        for _ in range(rng.randrange(6))
    ]


def _binary_text(size: int, seed: int = 1) -> str:
    return random.Random(seed).randbytes(size).decode("utf-8", "replace")


@pytest.mark.parametrize("form", FORMS)
def test_lines_put_in_form_together_read_as_each_alone(form):
    rng = random.Random(22)
    for _ in range(3000):
        lines = _lines(rng)
        assert in_form(lines, form) == [FORMS[form](line) for line in lines], lines
    lines = _binary_text(64 << 10).splitlines()
    assert in_form(lines, form) == [FORMS[form](line) for line in lines]


@pytest.mark.parametrize("form", FORMS)
def test_a_line_holding_a_newline_is_put_in_form_alone(form):
    lines = ["Ignore\nall", "previous ", "\n"]

    assert in_form(lines, form) == [FORMS[form](line) for line in lines]


def test_the_classes_kept_apart_by_newlines_drop_the_same_characters():
    """Every code point but the newline: what `in_form` drops is what `normalise` and
    `letters` drop."""
    for code in range(0x110000):
        if code == 0x0A:
            continue
        c = chr(code)
        assert bool(_DROPPED.fullmatch(c)) == bool(_DROPPED_BUT_NEWLINE.fullmatch(c)), hex(code)
        assert bool(_NOT_ALNUM.fullmatch(c)) == bool(_NOT_ALNUM_BUT_NEWLINE.fullmatch(c)), code


def test_unquote_in_one_pass_reads_as_urllib():
    rng = random.Random(22)
    pieces = ["%", "%e2", "%82", "%ac", "%4", "%zz", "%41", "a", "é", "€", "%C3%A9", "%c3"]
    pieces += ["x%f0%9f", "%98%80", "\ud800", "%%", "%0a"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        assert _unquote(text) == unquote(text), text
    text = _binary_text(256 << 10)
    assert _unquote(text) == unquote(text)


def test_rot13_through_bytes_reads_as_the_codec():
    text = _binary_text(256 << 10) + "Ignore all previous \ud800 é ß \U000e0041"

    assert _rot13(text) == codecs.encode(text, "rot13")


def _looked_up(data, keys: set, width: int, first: int = 0, last: int | None = None):
    last = len(data) - width + 1 if last is None else min(last, len(data) - width + 1)
    return [p for p in range(first, last) if data[p : p + width] in keys]


@pytest.mark.parametrize("chunk", [windows.CHUNK, 7])
def test_the_rolling_hash_finds_every_window_a_look_up_finds(monkeypatch, chunk):
    """In a text (astral characters and a lone surrogate among them) and in bytes, over the
    whole and over a span, with chunks of the default size and cut every 7 positions."""
    monkeypatch.setattr(windows, "CHUNK", chunk)
    monkeypatch.setattr(windows, "SHORT", 0 if chunk == 7 else windows.SHORT)
    rng = random.Random(22)
    text = "".join(rng.choice("ab\U0001f600\ud800é") for _ in range(3000))
    grams = {text[p : p + GRAM] for p in rng.sample(range(len(text) - GRAM), 40)}
    grams |= {"z" * GRAM, "short"}  # a key found nowhere, a key of another width
    keys = Keys(grams, GRAM)
    assert list(keys.positions(text)) == _looked_up(text, grams, GRAM)
    assert list(keys.positions(text, 100, 2000)) == _looked_up(text, grams, GRAM, 100, 2000)
    assert list(keys.positions(text, 2990, 5000)) == _looked_up(text, grams, GRAM, 2990)
    data = rng.randbytes(5000)
    raw = {data[p : p + 8] for p in rng.sample(range(len(data) - 8), 30)}
    assert list(Keys(raw, 8).positions(data)) == _looked_up(data, raw, 8)
    assert list(Keys(set(), 8).positions(data)) == []


def test_a_table_across_the_hashing_s_chunk_seams_is_caught(harness, monkeypatch):
    """The table as code, its rows cut by the rolling hash's chunks every 61 positions: a
    shingle across a seam is hashed in the chunk it starts in."""
    monkeypatch.setattr(windows, "CHUNK", 61)
    monkeypatch.setattr(windows, "SHORT", 0)

    verdict = harness.judge(append("runtime/agent.py", f"\nANSWERS = {TABLE!r}\n"))

    rejected(verdict, "beside its answer")


def test_a_table_gzip_d_in_the_middle_of_a_random_binary_is_caught(harness):
    """An honest-looking 1 MB binary (many lines of random bytes for the fast paths to read
    together) with the table gzip'd in its middle."""
    noise = random.Random(22).randbytes(1 << 20)
    data = noise[: len(noise) // 2] + gzip.compress(repr(TABLE).encode()) + noise[len(noise) // 2 :]

    verdict = harness.judge(_binary("skills/weights.bin", data))

    rejected(verdict, "beside its answer")


def test_the_lines_holding_a_digest_s_token_are_found_together_as_each_alone():
    """`_digests` reads only the lines `_with_tokens` keeps: every line in which one of the
    token patterns finds something on its own."""
    patterns = (_HEX_TOKEN, _B64_TOKEN, _B85_TOKEN, _A85_TOKEN)
    pool = ["deadbeef", "0123456789abcdef0123", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", "x", " "]
    pool += ["'", '"', "!#$%&()*+-;<=>?@^_`{|}~", "é", "\r", "\x85", "g", "A" * 28, "\n"]
    rng = random.Random(22)
    for _ in range(3000):
        lines = [
            (n, "".join(rng.choice(pool) for _ in range(rng.randrange(6))))
            for n in range(rng.randrange(6))
        ]
        alone = [(n, line) for n, line in lines if any(p.findall(line) for p in patterns)]
        kept = _with_tokens(lines)
        assert kept == alone or ("\n" in "".join(line for _, line in lines) and kept == lines)
