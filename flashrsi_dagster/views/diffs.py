"""A candidate's change against its parent, as a markdown ```diff block.

The diff is git's own, over every path the commit changed (nothing excluded). A long one is
cut at a line boundary, with a note saying what was left out and the command that prints it
whole from the experiment's snapshot repository.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.snapshots.store import DiffStats
from flashrsi_dagster.views.markup import code, fence

DEFAULT_MAX_CHARS = 20_000
MIN_CHARS = 2_000
"""Room for the header, the note and some lines: below this a diff says nothing useful."""
LONG_LINE = 1_000
"""A longer line (a minified file, say) is shortened, so that it cannot fill the block."""
FILES_NAMED = 5
"""Files left out are named up to this many, then counted."""
_FILE_HEADER = "diff --git "
_BINARY = "Binary files "


@dataclass(frozen=True)
class _Section:
    path: str
    start: int
    """Index of the section's `diff --git` line in the diff's lines."""
    binary: bool


def diff_markdown(
    store: SnapshotStore, parent_id: str, child_id: str, *, max_chars: int = DEFAULT_MAX_CHARS
) -> str:
    """The unified diff from `parent_id` to `child_id`, headed by its size, in at most
    `max_chars` characters. Binary files are named, not dumped."""
    if max_chars < MIN_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_CHARS}, got {max_chars}")
    text = _readable(store.diff(parent_id, child_id))
    if not text.strip():
        return "No change: the candidate's files are identical to its parent's.\n"
    lines = [_shorten(line) for line in text.splitlines()]
    sections = _sections(lines)
    header = _header(store.diff_stats(parent_id, child_id), sections)
    whole = f"{header}\n\n{fence(chr(10).join(lines), 'diff')}\n"
    if len(whole) <= max_chars:
        return whole
    return _cut(header, lines, sections, store.diff_command(parent_id, child_id), max_chars)


def _cut(
    header: str, lines: list[str], sections: list[_Section], command: str, max_chars: int
) -> str:
    """The diff cut after as many lines as fit with the header and the note."""
    reserve = 0
    while True:
        kept = _lines_within(lines, max_chars - len(header) - reserve)
        note = _note(lines, sections, kept, command)
        out = f"{header}\n\n{fence(chr(10).join(lines[:kept]), 'diff')}\n\n{note}\n"
        if len(out) <= max_chars or kept == 0:
            return out
        reserve += len(out) - max_chars  # the note and fence took more room than was left


def _lines_within(lines: Sequence[str], budget: int) -> int:
    used = 0
    for count, line in enumerate(lines):
        used += len(line) + 1
        if used > budget:
            return count
    return len(lines)


def _note(lines: Sequence[str], sections: Sequence[_Section], kept: int, command: str) -> str:
    left_out = len(lines) - kept
    whole_files = [s.path for s in sections if s.start >= kept]
    ends = [s.start for s in sections[1:]] + [len(lines)]
    partial = next(
        (s.path for s, end in zip(sections, ends, strict=True) if s.start < kept < end), None
    )
    parts = []
    if partial is not None:
        parts.append(f"the rest of {code(partial, 120)}")
    if whole_files:
        named = ", ".join(code(path, 120) for path in whole_files[:FILES_NAMED])
        more = len(whole_files) - FILES_NAMED
        named += f" and {more} more" if more > 0 else ""
        noun = "file" if len(whole_files) == 1 else "files"
        parts.append(f"{len(whole_files)} more {noun} ({named})")
    return (
        f"**Cut** after {kept:,} of {len(lines):,} lines: {left_out:,} left out, "
        f"{' and '.join(parts)}. The whole diff: {code(command, 1_000)}"
    )


def _sections(lines: Sequence[str]) -> list[_Section]:
    starts = [i for i, line in enumerate(lines) if line.startswith(_FILE_HEADER)]
    ends = [*starts[1:], len(lines)]
    return [
        _Section(
            _path(lines[start]),
            start,
            any(line.startswith(_BINARY) for line in lines[start:end]),
        )
        for start, end in zip(starts, ends, strict=True)
    ]


def _path(file_header: str) -> str:
    """The path of a `diff --git a/P b/P` line (the same P twice: renames are off)."""
    pair = file_header[len(_FILE_HEADER) :]
    first = pair[: (len(pair) - 1) // 2]
    if first.startswith('"'):  # git quotes a path with unusual characters
        first = first.strip('"')
    return first.removeprefix("a/")


def _header(stats: DiffStats, sections: Sequence[_Section]) -> str:
    noun = "file" if stats.files == 1 else "files"
    header = f"**{stats.files} {noun} changed**: +{stats.insertions:,} -{stats.deletions:,} lines"
    binary = [s.path for s in sections if s.binary]
    if binary:
        named = ", ".join(code(path, 120) for path in binary[:FILES_NAMED])
        more = len(binary) - FILES_NAMED
        header += f"; binary (named, not shown): {named}" + (
            f" and {more} more" if more > 0 else ""
        )
    return header


def _shorten(line: str) -> str:
    if len(line) <= LONG_LINE:
        return line
    return f"{line[:LONG_LINE]} [… {len(line) - LONG_LINE:,} more characters of this line]"


def _readable(text: str) -> str:
    """The diff with bytes that are not UTF-8 (git passes them through as lone surrogates)
    shown as U+FFFD: markdown metadata must encode as UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
