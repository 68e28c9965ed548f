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

_DROPPED = re.compile(r"[\s'\"`\\+,()\[\]\x00]+")


_NOT_ALNUM = re.compile(r"[\W_]+")


_TAGS = {0xE0000 + code: code for code in range(0x20, 0x7F)}
"""Unicode tag characters (U+E0020-E007E) to the ASCII they shadow: invisible text, one
`chr(0xE0000 + ord(c))` away from the plain one ("ASCII smuggling")."""


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text.translate(_TAGS)).casefold()


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
        for number, line in lines:
            piece = FORMS[form](line)
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
