"""The path guard: what an edited checkout may contain before it becomes a snapshot."""

from __future__ import annotations

import os
import stat
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


def _ignored(name: str, is_dir: bool) -> bool:
    return name in IGNORED_DIRS if is_dir else name.endswith(IGNORED_SUFFIXES)


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
    for rel, info in _walk(root, ""):
        name = rel.rsplit("/", 1)[-1]
        if name in GIT_METADATA:
            if strict:
                refusals.append(Refusal(rel, path_problem(rel) or "git metadata"))
            continue
        if stat.S_ISDIR(info.st_mode):
            continue
        if not declared(rel):
            if strict:
                refusals.append(Refusal(rel, "not a declared component file"))
            continue
        refusal = _entry_problem(root, rel, info, max_file_bytes)
        if refusal:
            refusals.append(Refusal(rel, refusal))
        else:
            entries.append(Entry(rel, info.st_size, stat.S_ISLNK(info.st_mode)))
    return entries, refusals


def _walk(root: Path, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
    with os.scandir(root / prefix if prefix else root) as listing:
        children = sorted(listing, key=lambda e: e.name)
    for child in children:
        rel = f"{prefix}/{child.name}" if prefix else child.name
        info = child.stat(follow_symlinks=False)
        is_dir = stat.S_ISDIR(info.st_mode)
        if _ignored(child.name, is_dir):
            continue
        yield rel, info
        if is_dir and child.name not in GIT_METADATA:
            yield from _walk(root, rel)


def _entry_problem(root: Path, rel: str, info: os.stat_result, max_file_bytes: int) -> str | None:
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        target = os.readlink(root / rel)
        if os.path.isabs(target):
            return f"symlink to an absolute path ({target}) is not allowed"
        resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if resolved == ".." or resolved.startswith("../"):
            return f"symlink points outside the harness ({target})"
        return None
    if not stat.S_ISREG(mode):
        return "not a regular file or symlink"
    if info.st_size > max_file_bytes:
        return f"file is {info.st_size} bytes, over the limit of {max_file_bytes}"
    return None
