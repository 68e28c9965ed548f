"""The markdown pieces the views are made of: fenced blocks and code spans that no content
can break out of, and text cut to a length with a note saying how much was cut.

What an agent or a Worker wrote is data, not markup: it always goes into a fence or a code
span, so a heading, an HTML tag or a stray fence in it cannot reshape the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_BACKTICKS = re.compile(r"`+")
_CUT = "\n[… {:,} characters cut …]\n"
_CUT_ROOM = 40  # characters kept free for the cut note, whatever the count's width


def fence(text: str, language: str = "") -> str:
    """`text` as a fenced block whose fence is longer than any run of backticks in it: a
    markdown file's own ``` (a context line of a diff, say) cannot close it early."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{language}\n{body}{ticks}"


def code(text: str, limit: int = 200) -> str:
    """`text` on one line (newlines shown as ⏎) as a code span, cut to `limit` characters."""
    flat = one_line(text, limit)
    longest = max((len(run) for run in _BACKTICKS.findall(flat)), default=0)
    ticks = "`" * (longest + 1)
    # A span that starts or ends with a backtick needs a space of padding (CommonMark).
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def one_line(text: str, limit: int = 200) -> str:
    """`text` with line breaks shown as ⏎, cut at `limit` characters with an ellipsis."""
    flat = " ⏎ ".join(line.strip() for line in text.strip().splitlines()) or text.strip()
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def clip(text: str, limit: int) -> str:
    """At most `limit` characters: the head and the tail kept in equal parts, the middle
    replaced by a note that counts the characters cut."""
    if len(text) <= limit:
        return text
    if limit < 2 * _CUT_ROOM:
        return text[:limit]
    room = limit - _CUT_ROOM
    head, tail = room // 2, room - room // 2
    return text[:head] + _CUT.format(len(text) - room) + text[len(text) - tail :]


def table_cell(text: str, limit: int = 200) -> str:
    """`text` fit for a markdown table cell: one line, pipes escaped."""
    return one_line(text, limit).replace("|", r"\|")


def markdown_table(header: Iterable[str], rows: Iterable[Iterable[object]], cell: int = 160) -> str:
    """A markdown table; each cell one line of at most `cell` characters (the records hold
    the text whole)."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(table_cell(str(c), cell) for c in row) + " |" for row in rows]
    return "\n".join(lines)
