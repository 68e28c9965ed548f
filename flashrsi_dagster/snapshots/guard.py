"""The path guard: what an edited checkout may contain before it becomes a snapshot."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# Git metadata a harness must never carry: it would change how the store reads the tree.
GIT_METADATA = frozenset({".git", ".gitattributes", ".gitmodules"})
# Produced by running the harness, never part of it: skipped rather than refused.
IGNORED_DIRS = frozenset({"__pycache__"})
IGNORED_SUFFIXES = (".pyc", ".pyo")

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class Refusal:
    path: str
    reason: str

    def render(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Entry:
    path: str
    """Relative POSIX path inside the checkout."""
    size: int
    symlink: bool


def path_problem(path: str) -> str | None:
    """Why a relative path given as text is unsafe, or None when it is fine."""
    if not path or "\0" in path:
        return "empty path or NUL byte"
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        return "absolute paths are not allowed; use a path relative to the harness folder"
    if ".." in pure.parts:
        return "`..` is not allowed; paths must stay inside the harness folder"
    if GIT_METADATA.intersection(pure.parts):
        return "git metadata (.git, .gitattributes, .gitmodules) is not allowed in a harness"
    return None


def scan(
    root: Path, declared: Callable[[str], bool], *, max_file_bytes: int, strict: bool
) -> tuple[list[Entry], list[Refusal]]:
    """Walk `root` without following symlinks.

    strict=True (an edited checkout): anything undeclared or unsafe is a refusal.
    strict=False (a seed source folder): undeclared files and git metadata are simply left out,
    but declared files that are unsafe are still refused.
    """
    entries: list[Entry] = []
    refusals: list[Refusal] = []
    for rel, item in _walk(root):
        if item.name in GIT_METADATA:
            if strict:
                refusals.append(Refusal(rel, path_problem(rel) or "git metadata"))
        elif not declared(rel):
            if strict:
                refusals.append(Refusal(rel, "not a declared component file"))
        elif problem := _entry_problem(rel, item, max_file_bytes):
            refusals.append(Refusal(rel, problem))
        else:
            size = 0 if item.is_symlink() else item.stat(follow_symlinks=False).st_size
            entries.append(Entry(rel, size, item.is_symlink()))
    return entries, sorted(refusals, key=lambda r: r.path)


def _walk(root: Path) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every non-folder entry under `root` (git metadata folders included, not entered)."""
    stack = [""]
    while stack:
        prefix = stack.pop()
        with os.scandir(root / prefix if prefix else root) as listing:
            for item in listing:
                rel = f"{prefix}/{item.name}" if prefix else item.name
                # DirEntry type checks use the directory listing itself: no stat call.
                if item.is_dir(follow_symlinks=False):
                    if item.name in GIT_METADATA:
                        yield rel, item
                    elif item.name not in IGNORED_DIRS:
                        stack.append(rel)
                elif not item.name.endswith(IGNORED_SUFFIXES):
                    yield rel, item


def _entry_problem(rel: str, item: os.DirEntry[str], max_file_bytes: int) -> str | None:
    if item.is_symlink():
        target = os.readlink(item.path)
        if os.path.isabs(target):
            return f"symlink to an absolute path ({target}) is not allowed"
        resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if resolved == ".." or resolved.startswith("../"):
            return f"symlink points outside the harness ({target})"
        return None
    if not item.is_file(follow_symlinks=False):
        return "not a regular file or symlink"
    size = item.stat(follow_symlinks=False).st_size
    if size > max_file_bytes:
        return f"file is {size} bytes, over the limit of {max_file_bytes}"
    return None
