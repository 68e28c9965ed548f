"""View, create and edit files in the task folder; paths never leave it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runtime.context import Context
from runtime.tool_result import bound

from tools.base import BaseTool, ToolError, int_arg, string_arg

SNIPPET_CONTEXT = 4  # lines shown around an edit
READ_COMMANDS = ("view",)
"""What a run that may not edit (`Context.read_only`) is offered."""


class EditorTool(BaseTool):
    name = "editor"

    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        command = arguments.get("command")
        handler = _COMMANDS.get(command) if isinstance(command, str) else None
        if handler is None:
            raise ToolError(f"unknown command {command!r}; use one of: {', '.join(_COMMANDS)}")
        if ctx.read_only and command not in READ_COMMANDS:
            raise ToolError(f"{command!r} is not allowed: this run may not change files")
        root = ctx.working_dir.resolve()
        path = resolve(string_arg(arguments, "path"), root)
        return bound(handler(path, root, arguments), ctx.output_limit)


def resolve(raw: str, root: Path) -> Path:
    """`raw` against the working dir; refused when it (or a symlink in it) leads outside."""
    if not raw.strip():
        raise ToolError("'path' is empty")
    path = (root / raw).resolve()  # an absolute `raw` replaces `root`
    if not path.is_relative_to(root):
        raise ToolError(f"{raw!r} is outside the working directory {root}")
    return path


def _view(path: Path, root: Path, arguments: dict[str, Any]) -> str:
    if path.is_dir():
        return _list_dir(path, root)
    lines = _lines(_read(path, root))
    if not lines:
        return f"{_rel(path, root)} is empty"
    start, end = _view_range(arguments.get("view_range"), len(lines))
    return _numbered(lines[start - 1 : end], start)


def _view_range(value: Any, count: int) -> tuple[int, int]:
    if value is None:
        return 1, count
    valid = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )
    if not valid:
        raise ToolError("'view_range' must be two integers [start, end]")
    start, end = value
    end = count if end == -1 else end
    if not 1 <= start <= count or end < start:
        raise ToolError(f"'view_range' {value} does not fit the file's {count} lines")
    return start, min(end, count)


def _list_dir(path: Path, root: Path) -> str:
    """Entries two levels deep, dot-entries hidden, folders marked with a trailing slash."""
    entries = []
    for child in _visible(path):
        entries.append(child)
        if child.is_dir():
            entries.extend(_visible(child))
    lines = [_rel(e, path) + ("/" if e.is_dir() else "") for e in entries]
    return f"{_rel(path, root)}/ (2 levels, hidden entries omitted):\n" + "\n".join(lines)


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def _create(path: Path, root: Path, arguments: dict[str, Any]) -> str:
    text = string_arg(arguments, "file_text")
    if path.is_dir():
        raise ToolError(f"{_rel(path, root)} is a folder")
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, text)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {_rel(path, root)} ({len(text.splitlines())} lines)"


def _str_replace(path: Path, root: Path, arguments: dict[str, Any]) -> str:
    old = string_arg(arguments, "old_str")
    new = string_arg(arguments, "new_str", required=False) or ""
    if not old:
        raise ToolError("'old_str' is empty")
    text = _read(path, root)
    starts = _occurrences(text, old)
    if not starts:
        raise ToolError(f"old_str not found in {_rel(path, root)}; nothing was changed")
    if len(starts) > 1:
        lines = ", ".join(str(text.count("\n", 0, i) + 1) for i in starts)
        raise ToolError(
            f"old_str occurs {len(starts)} times in {_rel(path, root)} (lines {lines}); "
            "include more context to make it unique"
        )
    text = text[: starts[0]] + new + text[starts[0] + len(old) :]
    _write(path, text)
    first = text.count("\n", 0, starts[0]) + 1
    return f"Edited {_rel(path, root)}:\n" + _snippet(text, first, first + new.count("\n"))


def _occurrences(text: str, sub: str) -> list[int]:
    """Start offsets, overlapping ones included: 'aa' occurs twice in 'aaa'."""
    starts, i = [], text.find(sub)
    while i != -1:
        starts.append(i)
        i = text.find(sub, i + 1)
    return starts


def _insert(path: Path, root: Path, arguments: dict[str, Any]) -> str:
    after = int_arg(arguments, "insert_line")
    new = string_arg(arguments, "new_str")
    lines = _lines(_read(path, root), keepends=True)
    if not 0 <= after <= len(lines):
        raise ToolError(f"'insert_line' must be between 0 and {len(lines)}, got {after}")
    if after and not lines[after - 1].endswith("\n"):
        lines[after - 1] += "\n"  # inserting after an unterminated last line
    block = new if new.endswith("\n") or not new else new + "\n"
    text = "".join(lines[:after]) + block + "".join(lines[after:])
    _write(path, text)
    last = after + max(block.count("\n"), 1)
    return f"Inserted into {_rel(path, root)}:\n" + _snippet(text, after + 1, last)


def _snippet(text: str, first: int, last: int) -> str:
    lines = _lines(text)
    start = max(first - SNIPPET_CONTEXT, 1)
    return _numbered(lines[start - 1 : last + SNIPPET_CONTEXT], start)


def _lines(text: str, keepends: bool = False) -> list[str]:
    """Lines split at "\n" only, so numbers agree with counting newlines (unlike splitlines)."""
    lines = re.split(r"(?<=\n)", text) if keepends else text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{n:6}\t{line.removesuffix('\r')}" for n, line in enumerate(lines, start))


def _read(path: Path, root: Path) -> str:
    if path.is_dir():
        raise ToolError(f"{_rel(path, root)} is a folder; view it to list its entries")
    if not path.exists():
        raise ToolError(f"{_rel(path, root)} does not exist")
    try:
        # newline="" keeps line endings as they are: an edit must not rewrite the whole file.
        with path.open(encoding="utf-8", newline="") as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise ToolError(f"{_rel(path, root)} is not UTF-8 text ({exc.reason})") from None


def _write(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(text)


def _rel(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix() if path != base else "."


_COMMANDS = {"view": _view, "create": _create, "str_replace": _str_replace, "insert": _insert}
