"""A trajectory as a readable transcript: a header saying how it ended and what it cost,
then each message and each tool call with its arguments and its result.

Long texts are cut in the middle with a note; when the whole is still too long, entries
from the middle are left out (with a note), never the start (the task) or the end (how it
ended).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from flashrsi_dagster.records import Trajectory
from flashrsi_dagster.views.figures import cost_text, duration_text, score_text
from flashrsi_dagster.views.markup import clip, code, fence
from flashrsi_dagster.views.messages import Entry, ToolCall, read_entries

DEFAULT_MAX_CHARS = 20_000
MIN_CHARS = 2_000
"""Room for the header and a few entries: below this a transcript says nothing useful."""
_PARTS = 16
"""One message, one call's arguments or one result gets at most 1/16 of the whole."""
_NOTE_ROOM = 300


def trajectory_markdown(
    trajectory: Trajectory, *, max_chars: int = DEFAULT_MAX_CHARS, source: str | None = None
) -> str:
    """The transcript of `trajectory` in at most `max_chars` characters. `source`, when
    given, says where the whole trajectory is (a record's path), for the cut notes."""
    if max_chars < MIN_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_CHARS}, got {max_chars}")
    part = max_chars // _PARTS
    header = _header(trajectory, part)
    entries = read_entries(trajectory.messages)
    if not entries:
        return f"{header}\n\nNo messages were recorded.\n"
    budget = max_chars - len(header) - 3
    blocks = [_block(n, entry, part, budget // 2) for n, entry in enumerate(entries, start=1)]
    return f"{header}\n\n{_fit(blocks, budget, max_chars, source)}\n"


def _header(t: Trajectory, part: int) -> str:
    split = f"{t.split} split, " if t.split else ""
    figures = [
        f"**Status** {t.status}",
        f"**score** {score_text(t.score)}",
        f"**turns** {t.usage.turns}",
        f"**tool calls** {t.usage.tool_calls}",
        f"**tokens** {t.usage.input_tokens:,} in / {t.usage.output_tokens:,} out",
        *([f"**cost** {cost_text(t.usage.cost)}"] if t.usage.cost is not None else []),
        f"**duration** {duration_text(t.duration)}",
    ]
    lines = [
        f"**Task** {code(t.task_id)} ({split}attempt {t.attempt}) "
        f"on snapshot {code(t.snapshot_id[:12] or '-')}",
        "",  # a paragraph each: a single line break renders as a space
        " · ".join(figures),
    ]
    if t.answer is not None:
        lines += ["", "**Answer**", fence(clip(t.answer, part) or "(empty)")]
    if t.error is not None:
        lines += ["", f"**Error** {code(t.error.type)}", fence(clip(t.error.message, part))]
        if t.error.traceback:  # its end says where it broke
            lines.append(fence(_tail(t.error.traceback, part)))
    return "\n".join(lines)


def _block(number: int, entry: Entry, part: int, cap: int) -> str:
    """The entry in at most `cap` characters: its texts cut harder when it has many calls."""
    for size in (part, part // 4, 100):
        block = _render(number, entry, size)
        if len(block) <= cap:
            return block
    return f"**#{number} {entry.role}**: {len(entry.calls)} tool calls, too many to show here."


def _render(number: int, entry: Entry, size: int) -> str:
    where = " (sub-agent)" if entry.sub_agent else ""
    lines = [f"**#{number} {entry.role}**{where}"]
    if entry.text or not entry.calls:
        lines.append(fence(clip(entry.text, size) or "(empty)"))
    for call in entry.calls:
        lines += _call_lines(call, size)
    return "\n".join(lines)


def _call_lines(call: ToolCall, size: int) -> list[str]:
    ident = f" ({code(call.id, 60)})" if call.id else ""
    lines = [
        f"→ tool call {code(call.name, 80)}{ident}",
        fence(clip(arguments_text(call.arguments), size)),
    ]
    if call.result is None:
        return [*lines, "← no result recorded"]
    return [
        *lines,
        "← result (error)" if call.failed else "← result",
        fence(clip(call.result, size)),
    ]


def arguments_text(arguments: dict[str, Any]) -> str:
    """One `key: value` line per argument; text with line breaks as an indented block, so a
    command or a file's content reads as written, not as an escaped JSON string."""
    if not arguments:
        return "(no arguments)"
    lines = []
    for key, value in arguments.items():
        if isinstance(value, str) and "\n" in value:
            lines += [f"{key}: |", *(f"  {line}" for line in value.splitlines())]
        elif isinstance(value, str):
            lines.append(f"{key}: {value}")
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False, default=str)}")
    return "\n".join(lines)


def _fit(blocks: Sequence[str], budget: int, max_chars: int, source: str | None) -> str:
    """The blocks joined; when too long, the middle ones left out: half the room goes to the
    first blocks, the rest to the last, whatever is left to more first blocks."""
    sizes = [len(block) + 2 for block in blocks]
    if sum(sizes) <= budget:
        return "\n\n".join(blocks)
    budget -= _NOTE_ROOM + len(source or "")
    head = used = 0
    while head < len(blocks) and used + sizes[head] <= budget // 2:
        used, head = used + sizes[head], head + 1
    tail_start = len(blocks)
    while tail_start > head and used + sizes[tail_start - 1] <= budget:
        used, tail_start = used + sizes[tail_start - 1], tail_start - 1
    while head < tail_start and used + sizes[head] <= budget:
        used, head = used + sizes[head], head + 1
    where = f"; the whole trajectory: {code(source, 1_000)}" if source else ""
    note = (
        f"**… entries #{head + 1} to #{tail_start} ({tail_start - head} of {len(blocks)}) "
        f"left out** to keep this under {max_chars:,} characters{where}."
    )
    return "\n\n".join([*blocks[:head], note, *blocks[tail_start:]])


def _tail(text: str, limit: int) -> str:
    """The last lines of `text` that fit in `limit` characters."""
    if len(text) <= limit:
        return text
    start = len(text) - limit
    newline = text.find("\n", start, len(text) - 1)  # a line boundary, but not the final one
    if newline != -1:
        start = newline + 1
    return f"[… {start:,} characters cut …]\n{text[start:]}"
