"""The coverage rule: every byte of a changed file is accounted for, or the file is unsearched.

The decoder reads the encodings and compressors it knows; a stream it does not know (one
that starts where it does not look, a compressor of its own, encrypted bytes) would pass as
noise. So instead of guessing every encoding, the check fails closed: a byte is accounted for
when it is

- text: a run of printable UTF-8, or of UTF-16 in a few scripts (the views read the first;
  the second is a language's text, never flagged);
- consumed: a byte of a compressed stream or an archive's member that the decoder read
  (`Budget.consumed`: not a header's name, extra field or comment, nor a zip's directory),
  wherever those same bytes lie;
- redundant: in a window of `WINDOW` bytes holding fewer than `DENSE` distinct values (zero
  padding, sparse tables, code): too little variety for compressed or encrypted data.

What is left, a window of `WINDOW` bytes of nothing accounted for holding `DENSE` distinct
values or more, is opaque: it looks compressed or encrypted, and no reading consumed it (the
stretches under a window are measured joined, and the files under a window too). The
same holds for each binary blob the decoder decoded (`Budget.audit`: base64, hex, escapes,
what a stream inflated to), longer than `DIGEST` bytes.

Calibrated on 64-byte windows (bench/RESULTS.md): random, deflate, bzip2 and xz hold 47 to 64
distinct values (nearly all 50 or more); text in UTF-8, EBCDIC, cp1251 or GBK 14 to 40; an
`.so` 1 to 62 (its code and its tables). Not seen: bytes of low variety that still carry data
(a one-byte XOR of text, a byte-oriented LZ77 whose literals stay text), pieces under a window,
text in an encoding of one's own (docs/host-duties.md, "What it cannot see").
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from itertools import accumulate

WINDOW = 64
"""Bytes one measure looks at: the smallest opaque piece flagged (at any offset, between
filler of any kind)."""
STEP = 8
"""Windows start every `STEP` bytes of a stretch of unaccounted bytes (and one at its end):
a piece of `WINDOW` bytes shares `WINDOW - STEP / 2` or more with one of them."""
SHARE = WINDOW - STEP
"""Bytes of a window nothing accounts for, at least, for it to be measured: text around a
piece takes a printable byte or two of it into its run."""
MARGIN = 8
"""Bytes at each end of a text run not counted as text: random bytes go on a run of UTF-8
by a printable byte in three, and of UTF-16 by a character in three."""
DENSE = 44
"""Distinct byte values in a window from which it looks compressed or encrypted: random
bytes hold 57 on average (56 of them 50), text in a legacy code page 40 at most."""
DIGEST = 80
"""A decoded blob this long or shorter is not measured: a digest (sha512 is 64 bytes, and
`sha512-` before its base64 in a lock file decodes with it), a key, a signature is random by
design and holds too little to matter."""
_TEXT = re.compile("[^\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\udc80-\udcff]{16,}")
"""Printable UTF-8 (with the bytes that are not UTF-8 decoded as lone surrogates), 16 or more
characters: random bytes hold such a run once in some 10^7 places."""
_WIDE_TEXT = re.compile(
    "[\t\n\r\x20-\x7e\u00a0-\u024f\u0370-\u06ff\u0900-\u0e7f\u2000-\u206f"
    "\u3000-\u9fff\uac00-\ud7a3\uff00-\uffef\U0001f000-\U0001faff]{16,}"
)
"""UTF-16 of a language's text: Latin, Greek, Cyrillic, Hebrew, Arabic, Indic, Thai, CJK,
Hangul, emoji (two thirds of the plane: random bytes hold a run of 16 once in 700 places,
and `_few_scripts` refuses it)."""


def opaque(data: bytes, consumed: Iterable[bytes]) -> tuple[int, int] | None:
    """The first opaque stretch of `data` (its offset and length), or None: bytes no text
    run, no consumed piece and no low-variety window accounts for."""
    if _is_text(data):
        return None
    accounted = bytearray(len(data))
    # a text run takes in the printable bytes of a piece beside it: its ends are not counted
    runs = [(start + MARGIN, end - MARGIN) for start, end in _text_runs(data)]
    for start, end in (*runs, *_found(data, consumed)):
        accounted[start:end] = b"\1" * max(end - start, 0)
    for start, end in _unaccounted(accounted):
        found = _dense(data, start, end)
        if found is not None:
            return found
    return _scattered(data, accounted)


def unaccounted(blobs: Mapping[str, list[bytes]], consumed: Iterable[bytes]) -> list[str]:
    """A reason for each file whose bytes, or a blob decoded from them (`blobs`: each file's
    bytes, then what the decoder decoded from them), hold an opaque stretch."""
    pieces, reasons = [piece for piece in consumed if piece], []
    for file, (data, *decoded) in blobs.items():
        measured = [data, *(blob for blob in dict.fromkeys(decoded) if len(blob) > DIGEST)]
        for number, blob in enumerate(measured):
            if (found := opaque(blob, pieces)) is not None:
                reasons.append(_reason(file, *found, " of a blob it decodes" if number else ""))
                break
    return reasons + _small_files({file: data for file, (data, *_) in blobs.items()}, pieces)


def _small_files(files: Mapping[str, bytes], pieces: list[bytes]) -> list[str]:
    """A reason when the files under a window, joined, hold an opaque stretch: each is too
    short to be measured alone, and a table cut into files of 63 bytes is read back whole."""
    small = {file: data for file, data in files.items() if len(data) < WINDOW}
    found = opaque(b"".join(small.values()), pieces)
    if found is None:
        return []
    ends = [0, *accumulate(map(len, small.values()))]
    number = bisect_right(ends, found[0]) - 1
    where = f" of the files under {WINDOW} bytes joined"
    return [_reason([*small][number], found[0] - ends[number], found[1], where)]


def _reason(file: str, at: int, length: int, where: str = "") -> str:
    return (
        f"{file}: opaque bytes at offset {at:#x}{where} ({length} bytes that look compressed "
        "or encrypted; the check cannot read them): unsearched"
    )


def _is_text(data: bytes) -> bool:
    """UTF-8 printable end to end, or too short to hold a window (most files)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return len(data) < WINDOW
    return len(data) < WINDOW or _TEXT.fullmatch(text) is not None


def _text_runs(data: bytes) -> Iterator[tuple[int, int]]:
    """Where `data` holds text, in bytes: runs of printable UTF-8, then UTF-16 of either
    byte order at either alignment, in a few scripts."""
    text = _runs(data.decode("utf-8", "surrogateescape"), _TEXT, "utf-8", "surrogateescape")
    yield from ((start, end) for start, end, _ in text)
    for codec in ("utf-16-le", "utf-16-be"):
        for align in (0, 1):
            body = data[align : align + (len(data) - align) // 2 * 2]
            runs = _runs(body.decode(codec, "surrogatepass"), _WIDE_TEXT, codec, "surrogatepass")
            for start, end, run in runs:
                if _few_scripts(run):
                    yield align + start, align + end


def _runs(decoded: str, pattern: re.Pattern, codec: str, errors: str) -> Iterator:
    """The matches of `pattern` in `decoded`, as the offsets of their bytes (counted in C,
    piece by piece: a character is 1 to 4 bytes), and the matched text."""
    at = done = 0
    for m in pattern.finditer(decoded):
        at += len(decoded[done : m.start()].encode(codec, errors))
        end = at + len(m.group().encode(codec, errors))
        yield at, end, m.group()
        at, done = end, m.end()


def _few_scripts(run: str) -> bool:
    """Whether a run of UTF-16 reads as a language's text: its characters from few blocks
    (one more allowed each 64 characters; ASCII and punctuation free). Random bytes read as
    UTF-16 are characters from all over the plane, a new block nearly every character."""
    blocks = {_block(ord(char)) for char in run if ord(char) >= 0x80}
    blocks -= {0x20}  # general punctuation (dashes, quotes)
    return len(blocks) <= 3 + len(run) // 64


def _block(code: int) -> int:
    if 0x3000 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0xFF00 <= code <= 0xFFEF:
        return 0x30  # CJK: ideographs, kana, their punctuation, full width forms
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return 0xAC  # Hangul
    return code >> 8


def _found(data: bytes, consumed: Iterable[bytes]) -> Iterator[tuple[int, int]]:
    """Every place `data` holds a piece a reading consumed: the same bytes read the same."""
    for piece in consumed:
        if not piece or len(piece) > len(data):
            continue  # an empty piece is found everywhere, and accounts for nothing
        at = data.find(piece)
        while at >= 0:
            yield at, at + len(piece)
            at = data.find(piece, at + len(piece))


def _unaccounted(accounted: bytearray) -> Iterator[tuple[int, int]]:
    """The stretches of `SHARE` bytes or more that nothing accounts for."""
    for m in re.finditer(rb"\0{%d,}" % SHARE, accounted):
        yield m.span()


def _scattered(data: bytes, accounted: bytearray) -> tuple[int, int] | None:
    """The first dense window of the stretches under `SHARE` bytes, joined: pieces under a
    window each, between short text runs or what a reading consumed (39 bytes after each
    line of 25 characters: a run's margins take each stretch to 55 bytes), carry a table as
    well as one piece does. Where the first of them starts, and their bytes joined."""
    spans = [m.span() for m in re.finditer(rb"\0+", accounted) if len(m.group()) < SHARE]
    joined = b"".join(data[start:end] for start, end in spans)
    found = _dense(joined, 0, len(joined)) if len(joined) >= WINDOW else None
    if found is None:
        return None
    ends = list(accumulate(end - start for start, end in spans))
    return spans[bisect_right(ends, found[0])][0], found[1]


def _dense(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The first run of dense windows sharing `SHARE` bytes or more with `data[start:end]`
    (a window may reach into the text around it): where it starts and its length, within
    the stretch."""
    view, last_start = memoryview(data), min(end - SHARE, len(data) - WINDOW)
    starts = [*range(max(start - (WINDOW - SHARE), 0), last_start, STEP), last_start]
    first = last = None
    for at in starts:
        shared = min(at + WINDOW, end) - max(at, start)
        if shared >= SHARE and len(set(view[at : at + WINDOW])) >= DENSE:
            first = at if first is None else first
            last = at + WINDOW
        elif first is not None:
            break
    if first is None or last is None:
        return None
    return max(first, start), min(last, end) - max(first, start)
