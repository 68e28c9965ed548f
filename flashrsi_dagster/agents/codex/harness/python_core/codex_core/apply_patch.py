"""`apply_patch`: Codex's patch format, parsed whole, checked whole, then applied.

    *** Begin Patch
    *** Add File: <path>          every following line starts with `+`
    *** Delete File: <path>
    *** Update File: <path>
    *** Move to: <new path>       optional, right after Update File
    @@ [context header]           one or more hunks: ` ` context, `-` removed, `+` added
    *** End of File               optional: the hunk ends at the end of the file
    *** End Patch

Paths are relative to the working folder and must stay inside it (symlinks followed). Nothing
is written unless every file operation applies: a malformed patch or a hunk that does not match
changes no file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = (
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
)
END_OF_FILE = "*** End of File"


class PatchError(ValueError):
    """A patch that is malformed or does not apply; the message says where and why."""


@dataclass
class Hunk:
    header: str
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    at_end: bool = False


@dataclass
class FileOp:
    kind: str  # "add" | "delete" | "update"
    path: str
    lines: list[str] = field(default_factory=list)  # add: the file's lines
    hunks: list[Hunk] = field(default_factory=list)
    move_to: str | None = None


def parse(text: str) -> list[FileOp]:
    lines = text.strip().splitlines()
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"the patch must start with `{BEGIN}`")
    if lines[-1].strip() != END:
        raise PatchError(f"the patch must end with `{END}`")
    ops: list[FileOp] = []
    i = 1
    while i < len(lines) - 1:
        line = lines[i]
        if line.startswith(ADD):
            op = FileOp("add", _name(line, ADD, i))
            i += 1
            while i < len(lines) - 1 and not lines[i].startswith("*** "):
                if not lines[i].startswith("+"):
                    raise PatchError(f"line {i + 1}: an added file's lines must start with `+`")
                op.lines.append(lines[i][1:])
                i += 1
        elif line.startswith(DELETE):
            op = FileOp("delete", _name(line, DELETE, i))
            i += 1
        elif line.startswith(UPDATE):
            op = FileOp("update", _name(line, UPDATE, i))
            i += 1
            if i < len(lines) - 1 and lines[i].startswith(MOVE):
                op.move_to = _name(lines[i], MOVE, i)
                i += 1
            i = _hunks(lines, i, op)
        else:
            raise PatchError(
                f"line {i + 1}: expected `{ADD.strip()}`, `{DELETE.strip()}` or "
                f"`{UPDATE.strip()}`, got {line[:80]!r}"
            )
        ops.append(op)
    if not ops:
        raise PatchError("the patch changes no file")
    return ops


def _name(line: str, prefix: str, index: int) -> str:
    name = line[len(prefix) :].strip()
    if not name:
        raise PatchError(f"line {index + 1}: `{prefix.strip()}` needs a path")
    return name


def _hunks(lines: list[str], i: int, op: FileOp) -> int:
    hunk: Hunk | None = None
    while i < len(lines) - 1 and not _starts_op(lines[i]):
        line = lines[i]
        if line.startswith("@@"):
            hunk = Hunk(line[2:].strip())
            op.hunks.append(hunk)
        elif line.strip() == END_OF_FILE:
            if hunk is None:
                raise PatchError(f"line {i + 1}: `{END_OF_FILE}` outside a hunk")
            hunk.at_end = True
        else:
            if hunk is None:  # Codex allows the first hunk without its `@@` line
                hunk = Hunk("")
                op.hunks.append(hunk)
            kind, body = (line[:1], line[1:]) if line else (" ", "")
            if kind not in " -+":
                raise PatchError(
                    f"line {i + 1}: a hunk line must start with ' ', '-' or '+', got {line[:80]!r}"
                )
            if kind in " -":
                hunk.old.append(body)
            if kind in " +":
                hunk.new.append(body)
        i += 1
    if not op.hunks or not any(h.old or h.new for h in op.hunks):
        raise PatchError(f"`{UPDATE}{op.path}` has no hunk")
    return i


def _starts_op(line: str) -> bool:
    return line.startswith((ADD, DELETE, UPDATE)) or line.strip() == END


def resolve(cwd: Path, name: str) -> Path:
    """`name` inside `cwd`, or PatchError: no absolute path, no escape by `..` or a link."""
    if os.path.isabs(name):
        raise PatchError(f"{name}: absolute paths are refused; give a path relative to the cwd")
    root = cwd.resolve()
    path = (root / name).resolve()
    if path != root and root not in path.parents:
        raise PatchError(f"{name}: the path leaves the working folder")
    return path


def apply(text: str, cwd: Path) -> str:
    """Apply a patch under `cwd`; returns Codex's summary (`A`/`M`/`D` per path)."""
    writes: dict[Path, str | None] = {}  # None: delete
    summary = []
    for op in parse(text):
        path = resolve(cwd, op.path)
        if op.kind == "add":
            if path.exists():
                raise PatchError(f"{op.path}: Add File of a file that already exists")
            writes[path] = "\n".join(op.lines) + "\n"
            summary.append(f"A {op.path}")
        elif op.kind == "delete":
            if not path.is_file():
                raise PatchError(f"{op.path}: Delete File of a file that does not exist")
            writes[path] = None
            summary.append(f"D {op.path}")
        else:
            if not path.is_file():
                raise PatchError(f"{op.path}: Update File of a file that does not exist")
            current = writes.get(path) or path.read_text(encoding="utf-8")
            updated = _apply_hunks(current, op)
            if op.move_to:
                writes[path] = None
                path = resolve(cwd, op.move_to)
            writes[path] = updated
            summary.append(f"M {op.move_to or op.path}")
    for path, content in writes.items():
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    return "Success. Updated the following files:\n" + "\n".join(summary)


def _apply_hunks(content: str, op: FileOp) -> str:
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline is restored below
    position = 0
    for number, hunk in enumerate(op.hunks, start=1):
        if hunk.header:
            found = _find(lines, [hunk.header], position)
            if found is not None:
                position = found + 1
        start = _find(lines, hunk.old, position, at_end=hunk.at_end)
        if start is None:
            shown = "\n".join(hunk.old[:6])
            raise PatchError(
                f"{op.path}: hunk {number} does not match the file; expected lines:\n{shown}"
            )
        lines[start : start + len(hunk.old)] = hunk.new
        position = start + len(hunk.new)
    return "\n".join(lines) + "\n"


def _find(lines: list[str], needle: list[str], start: int, at_end: bool = False) -> int | None:
    """Where `needle` occurs at or after `start`: exact first, then ignoring trailing space,
    then ignoring surrounding space (as Codex's matcher relaxes)."""
    if not needle:
        return len(lines) if at_end else start
    for norm in (lambda s: s, str.rstrip, str.strip):
        wanted = [norm(s) for s in needle]
        last = len(lines) - len(needle)
        candidates = [last] if at_end else range(start, last + 1)
        for index in candidates:
            if index >= 0 and [norm(s) for s in lines[index : index + len(needle)]] == wanted:
                return index
    return None
