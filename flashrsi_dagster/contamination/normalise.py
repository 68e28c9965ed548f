"""The one normal form both sides are compared in: a task's secrets and a harness's text.

Case is folded (after Unicode NFKC, and Unicode tag characters read as the ASCII they
shadow), and whitespace, quotes, backslashes and the characters
that join or list string pieces (`+ , ( ) [ ]`) are dropped, and NUL (UTF-16 or UTF-32 of
ASCII reads plain). A text written in another case, re-wrapped, split over lines or assembled
from quoted pieces (`"ignore all " + "previous"`, implicit concatenation, a list joined at run
time) reads the same; other punctuation stays,
so a text made mostly of symbols (Morse code, say) keeps what tells it apart.

A task's input is also compared in a second form, its letters and digits alone (`letters`):
a table keyed by `"_".join(text.split())`, by its words joined with dots, by the text with
its punctuation stripped, with an invisible character (a zero-width space, a soft hyphen)
or a combining mark (an accent, a strike-through) after its letters reads the same there.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

_DROPPED = re.compile(r"[\s'\"`\\+,()\[\]\x00]+")


_NOT_ALNUM = re.compile(r"[\W_]+")


_TAGS = {0xE0000 + code: code for code in range(0x20, 0x7F)}
"""Unicode tag characters (U+E0020-E007E) to the ASCII they shadow: invisible text, one
`chr(0xE0000 + ord(c))` away from the plain one ("ASCII smuggling")."""


_TAG = re.compile("[\U000e0020-\U000e007e]")


def _folded(text: str) -> str:
    # `translate` with a mapping looks every character of a non-ASCII text up one by one
    # (seconds for a binary file's views): the few texts holding a tag character pay it
    if not text.isascii() and _TAG.search(text):
        text = text.translate(_TAGS)
    return unicodedata.normalize("NFKC", text).casefold()


def normalise(text: str) -> str:
    return _DROPPED.sub("", _folded(text))


def letters(text: str) -> str:
    """The text's letters and digits alone, in the case `normalise` gives them, each letter
    without its accents: NFKC composes `e` and a combining accent after it into `é`, so a text
    with a combining mark after every letter (one `unicodedata` call from the plain one) would
    read as other letters; decomposed, the marks are not letters and drop."""
    return _NOT_ALNUM.sub("", unicodedata.normalize("NFKD", _folded(text)))


FORMS: dict[str, Callable[[str], str]] = {"normal": normalise, "letters": letters}
"""The forms a text is compared in: every secret in the first, a task's input in both."""

_SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c != "\n")
"""What `\\s` matches (`str.isspace`, none past U+3000) but the newline."""
_DROPPED_BUT_NEWLINE = re.compile("[" + re.escape(_SPACES) + r"'\"`\\+,()\[\]\x00]+")
_NOT_ALNUM_BUT_NEWLINE = re.compile(r"[^\w\n]+|_+")
_NFKC = partial(unicodedata.normalize, "NFKC")
_NFKD = partial(unicodedata.normalize, "NFKD")


def in_form(lines: list[str], form: str) -> list[str]:
    """`[FORMS[form](line) for line in lines]` for lines without a newline in them, in a few
    calls over them all joined by newlines (a binary file's view has tens of thousands of
    lines: a call per line per step cost seconds). The tag mapping, case folding and the
    characters dropped go character by character, and the newline is not dropped here, so
    it cuts the lines apart again; NFKC and NFKD stay a call per line (a text that is
    normal already is one quick check, and most lines are)."""
    joined = "\n".join(lines)
    if not joined.isascii() and _TAG.search(joined):
        joined = joined.translate(_TAGS)
    folded = "\n".join(map(_NFKC, joined.split("\n"))).casefold()
    if form == "normal":
        pieces = _DROPPED_BUT_NEWLINE.sub("", folded).split("\n")
    else:
        decomposed = "\n".join(map(_NFKD, folded.split("\n")))
        pieces = _NOT_ALNUM_BUT_NEWLINE.sub("", decomposed).split("\n")
    if len(pieces) != len(lines):  # a line held a newline: one at a time
        return [FORMS[form](line) for line in lines]
    return pieces


@dataclass(frozen=True)
class Stream:
    """A text's lines in normal form, end to end, and where each line starts in it."""

    text: str
    starts: tuple[int, ...]
    numbers: tuple[int, ...]
    """The source line number of each piece (a decoded blob's lines all map to its line)."""

    @classmethod
    def of(cls, lines: list[tuple[int, str]], form: str = "normal") -> Stream:
        pieces, starts, numbers, at = [], [], [], 0
        for (number, _), piece in zip(
            lines, in_form([line for _, line in lines], form), strict=True
        ):
            if piece:
                pieces.append(piece)
                starts.append(at)
                numbers.append(number)
                at += len(piece)
        return cls("".join(pieces), tuple(starts), tuple(numbers))

    def line(self, position: int) -> int:
        """The source line of the character at `position`."""
        return self.numbers[max(bisect_right(self.starts, position) - 1, 0)]

    def lines(self, start: int, end: int) -> tuple[int, int]:
        """The first and last source lines of the characters [start, end)."""
        return self.line(start), self.line(max(end - 1, start))
