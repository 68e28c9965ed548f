"""The code of a refused edit, as a unified diff against the seed, kept in its edit record so
later Workers can read what was tried and why it was refused (the reference keeps every
candidate's code). The edit folder is hostile: symlinks are named, never followed; large or
binary files are named, not read; a refusal for a secret keeps no code at all (the redactor
knows the secret's plain form, not every encoding the leak check caught); and the diff is
bounded, so a flood of files cannot swell the records.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

from flashrsi_dagster.snapshots import HISTORY_DIR
from flashrsi_dagster.snapshots.guard import Refusal

MAX_FILE_BYTES = 256 * 1024
MAX_DIFF_CHARS = 64 * 1024
WITHHELD = "(code withheld: the edit held a secret)"
_SKIPPED = {HISTORY_DIR, ".git"}


def refused_diff(seed: Path, edit: Path, refusals: Iterable[Refusal]) -> str:
    """The edit's changes to the seed checkout, file by file in path order."""
    if any(r.kind == "secret" for r in refusals):
        return WITHHELD
    before, after = _files(seed), _files(edit)
    parts: list[str] = []
    size = 0
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    for n, path in enumerate(changed):
        part = _file_diff(path, before.get(path), after.get(path))
        if size + len(part) > MAX_DIFF_CHARS:
            parts.append(f"… {len(changed) - n} more changed file(s) not shown (diff bounded)\n")
            break
        parts.append(part)
        size += len(part)
    return "".join(parts)


def _files(root: Path) -> dict[str, bytes | str]:
    """Relative path -> bytes (a regular file), or a note (a symlink, a large file)."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        rel = Path(folder).relative_to(root)
        dirs[:] = sorted(d for d in dirs if not (rel == Path(".") and d in _SKIPPED))
        for name in [*names, *(d for d in dirs if (Path(folder) / d).is_symlink())]:
            path = Path(folder) / name
            key = (rel / name).as_posix()
            if path.is_symlink():
                found[key] = f"symlink to {os.readlink(path)!r} (not followed)"
            elif path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
                found[key] = f"{path.stat().st_size} bytes (too large to show)"
            elif path.is_file():
                found[key] = path.read_bytes()
    return found


def _file_diff(path: str, old: bytes | str | None, new: bytes | str | None) -> str:
    if isinstance(old, str) or isinstance(new, str):  # a symlink or large file on a side
        return f"{path}: {_describe(old)} -> {_describe(new)}\n"
    a, b = _text(old), _text(new)
    if a is None or b is None:
        return f"Binary file {path} differs\n"
    lines = difflib.unified_diff(
        a.splitlines(keepends=True),
        b.splitlines(keepends=True),
        fromfile=f"a/{path}" if old is not None else "/dev/null",
        tofile=f"b/{path}" if new is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _describe(side: bytes | str | None) -> str:
    return "absent" if side is None else "a file" if isinstance(side, bytes) else side


def _text(side: bytes | None) -> str | None:
    """The file's text ("" when absent), or None when it is not UTF-8."""
    try:
        return (side or b"").decode()
    except UnicodeDecodeError:
        return None
