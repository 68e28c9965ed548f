"""Marker lines in the framework's instructions (`instruction_markers`) and the paths they
name, read the same way by every policy: a marker starts a line of its own and its value is
the rest of that line (surrounding backquotes dropped); a path is used only when it is
relative and stays inside the working folder."""

from __future__ import annotations

import re
from pathlib import PurePosixPath


def marker(name: str) -> re.Pattern[str]:
    """The pattern of a line `<name> <value>` (its `value` group), anywhere in a text."""
    return re.compile(rf"^[ \t]*{re.escape(name)}[ \t]*(?P<value>.*?)[ \t]*$", re.MULTILINE)


def marker_value(pattern: re.Pattern[str], text: str) -> str | None:
    """The value of the first line the pattern matches, or None when there is none."""
    match = pattern.search(text)
    return match["value"].strip("`") if match else None


def safe_path(path: str) -> bool:
    """A relative path inside the working folder (the simulator never looks outside it)."""
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts and path[0] != "~"
