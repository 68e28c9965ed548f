"""The path guard: what an edited checkout may contain before it becomes a snapshot."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# Git metadata a harness must never carry: it would change how the store reads the tree.
GIT_METADATA = frozenset({".git", ".gitattributes", ".gitmodules"})
# Produced by running the harness, never part of it: skipped rather than refused.
IGNORED_DIRS = frozenset({"__pycache__"})
IGNORED_SUFFIXES = (".pyc", ".pyo")

# Folders the framework lends into an edit folder: the Meta-Harness history of earlier
# versions and records. Not part of any harness; a symlink into one would carry that history
# into the snapshot's runs.
HISTORY_DIR = ".history"
RESERVED_NAMES = frozenset({HISTORY_DIR})

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 100 * 1024 * 1024
MAX_FILES = 10_000
"""Files (and symlinks) one snapshot may hold. A harness is tens of files, and each costs the
store's commit and the content check a fixed time whatever its size, which `max_total_bytes`
does not bound: 200,000 empty files took 30 s to commit and 53 s to judge on a loaded 2-core
machine, so a Worker making millions would stall the host's checks of every candidate."""
MAX_ENTRIES = 2 * MAX_FILES
"""Entries of any kind the walk meets (folders and skipped `*.pyc` files too, which
`MAX_FILES` does not count): each costs the walk and `git add` a directory read or a match, so
a million empty folders would stall the host's checks as a million files would."""
MAX_PATH_BYTES = 1024
"""A path's length inside the snapshot: a folder nested past the kernel's 4096-byte path
(made one `cd` at a time) cannot be walked, nor checked out under a longer root."""
# Symlinks followed through each other before a chain counts as a loop (Linux allows 40).
_MAX_LINK_HOPS = 40
# What `_follow` returns for a path that steps through a file or a missing folder (ENOTDIR,
# ENOENT): never a relative path.
_NOT_A_FOLDER = "/"


@dataclass(frozen=True)
class Refusal:
    path: str
    reason: str
    kind: str = "path"
    """`path` (the path guard), `secret`, or `protected` (an evaluator-protected path)."""

    def render(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Entry:
    path: str
    """Relative POSIX path inside the checkout."""
    size: int
    symlink: bool
    target: str | None = None
    """A symlink's target joined to the link's folder, `..` kept: relative to the checkout
    root, to be followed part by part (`_follow`)."""


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
    root: Path,
    declared: Callable[[str], bool],
    *,
    max_file_bytes: int,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    strict: bool,
) -> tuple[list[Entry], list[Refusal]]:
    """Walk `root` without following symlinks.

    strict=True (an edited checkout): anything undeclared or unsafe is a refusal.
    strict=False (a seed source folder): undeclared files and git metadata are simply left out,
    but declared files that are unsafe are still refused.
    Beyond each entry on its own: a symlink must reach a file or folder of the snapshot, and
    all files together must fit in `max_total_bytes`, and be at most `MAX_FILES` (the walk
    stops past it: a million files are not walked).
    """
    entries: list[Entry] = []
    refusals: list[Refusal] = []
    for rel, item in _walk(root, bounded=strict):
        if len(entries) + len(refusals) >= MAX_FILES or item is None:
            limit = f"more than {MAX_FILES} files" if item else f"more than {MAX_ENTRIES} entries"
            return entries, [Refusal(".", f"the harness holds {limit}, over the snapshot limit")]
        if isinstance(item, str):
            refusals.append(Refusal(rel, item))
        elif item.name in GIT_METADATA:
            if strict:
                refusals.append(Refusal(rel, path_problem(rel) or "git metadata"))
        elif not declared(rel):
            if strict:
                refusals.append(Refusal(rel, "not a declared component file"))
        elif problem := _entry_problem(rel, item, max_file_bytes):
            refusals.append(Refusal(rel, problem))
        elif item.is_symlink():
            target = posixpath.join(posixpath.dirname(rel), os.readlink(item.path))
            entries.append(Entry(rel, 0, True, target))
        else:
            entries.append(Entry(rel, item.stat(follow_symlinks=False).st_size, False))
    refusals += _dangling_links(entries)
    total = sum(entry.size for entry in entries)
    if total > max_total_bytes:
        refusals.append(
            Refusal(
                ".",
                f"the harness files total {total} bytes, over the snapshot limit of "
                f"{max_total_bytes} (max_total_bytes)",
            )
        )
    shown = [Refusal(_as_text(r.path), _as_text(r.reason), r.kind) for r in refusals]
    return entries, sorted(shown, key=lambda r: r.path)


def _walk(root: Path, *, bounded: bool) -> Iterator[tuple[str, os.DirEntry[str] | str | None]]:
    """Every non-folder entry under `root` (git metadata folders included, not entered).
    `bounded` (an edited checkout): for a folder that cannot be walked (too long a path,
    unreadable), why; None once past `MAX_ENTRIES` entries of any kind met, and the walk
    stops. Unbounded (a seed's source folder, the operator's): such folders are left out,
    as undeclared files are."""
    stack, met = [""], 0
    while stack:
        prefix = stack.pop()
        try:
            listing = os.scandir(root / prefix if prefix else root)
        except OSError as exc:
            if not (bounded or prefix):
                raise
            if bounded:
                yield prefix, f"a folder the store cannot read ({exc.strerror})"
            continue
        with listing:
            for item in listing:
                met += 1
                if bounded and met > MAX_ENTRIES:
                    yield prefix, None
                    return
                rel = f"{prefix}/{item.name}" if prefix else item.name
                # DirEntry type checks use the directory listing itself: no stat call.
                if item.is_dir(follow_symlinks=False):
                    if item.name in GIT_METADATA:
                        yield rel, item
                    elif len(rel.encode(errors="surrogateescape")) > MAX_PATH_BYTES:
                        if bounded:
                            yield rel, f"a path longer than {MAX_PATH_BYTES} bytes"
                    elif item.name not in IGNORED_DIRS:
                        stack.append(rel)
                elif not item.name.endswith(IGNORED_SUFFIXES):
                    yield rel, item


def _entry_problem(rel: str, item: os.DirEntry[str], max_file_bytes: int) -> str | None:
    if not _is_text(rel):  # the content check reads every name as text
        return "a path that is not UTF-8 text"
    if item.is_symlink():
        return _symlink_problem(rel, os.readlink(item.path))
    if not item.is_file(follow_symlinks=False):
        return "not a regular file or symlink"
    size = item.stat(follow_symlinks=False).st_size
    if size > max_file_bytes:
        return f"file is {size} bytes, over the limit of {max_file_bytes} (max_file_bytes)"
    return None


def _is_text(name: str) -> bool:
    """Whether a name read from the disk is UTF-8 (Python reads other bytes as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _as_text(name: str) -> str:
    """A name for a message and the ledger: bytes that are not UTF-8 as `\\xff` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _lexical_target(rel: str, target: str) -> str:
    """The target as a path relative to the checkout root, `..` folded without the disk."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))


def _symlink_problem(rel: str, target: str) -> str | None:
    if os.path.isabs(target):
        return f"symlink to an absolute path ({target}) is not allowed"
    resolved = _lexical_target(rel, target)
    if resolved == ".." or resolved.startswith("../"):
        return f"symlink points outside the harness ({target})"
    reserved = RESERVED_NAMES.intersection(PurePosixPath(resolved).parts)
    if reserved:
        return (
            f"symlink into the reserved folder {min(reserved)} ({target}); it is lent by the "
            "framework and never part of a harness"
        )
    return None


def _dangling_links(entries: list[Entry]) -> list[Refusal]:
    """Symlinks whose target, followed through the snapshot's own symlinks as the kernel
    follows them, is outside the snapshot, in its reserved folder, or no file or folder of
    it: checked out, they would reach out of it, dangle or loop."""
    links = {entry.path: entry.target for entry in entries if entry.target is not None}
    if not links:
        return []  # the common case: no set of every path to build
    folders = {"."}
    for entry in entries:
        folder = entry.path
        while "/" in folder:
            folder = folder.rpartition("/")[0]
            folders.add(folder)
    present = folders | {entry.path for entry in entries}
    refusals = []
    for path, target in links.items():
        problem = _followed_problem(_follow(target, links, folders), present)
        if problem:
            folder = posixpath.dirname(path)
            written = target[len(folder) + 1 :] if folder else target
            shown = written if "through" in problem else posixpath.normpath(target)
            refusals.append(Refusal(path, problem.format(shown)))
    return refusals


def _followed_problem(resolved: str | None, present: set[str]) -> str | None:
    """What is wrong with a followed target, its written target left as `{}`."""
    if resolved is None:
        return "symlink loop ({})"
    if resolved == _NOT_A_FOLDER:
        return "dangling symlink: its target {} goes through what is no folder of the harness"
    if resolved == "..":
        return "symlink points outside the harness through another symlink ({})"
    if RESERVED_NAMES.intersection(resolved.split("/")):
        return "symlink into a reserved folder through another symlink ({})"
    if resolved not in present:
        return "dangling symlink: its target {} is no file or folder of the harness"
    return None


def _follow(path: str, links: dict[str, str], folders: set[str]) -> str | None:
    """`path` followed part by part as the kernel does: a symlinked prefix is replaced by its
    target before the `..` after it is taken (`runtime/l/..` with `runtime/l -> ..` is the
    checkout's parent, where folding `l/..` first stays in `runtime`), and a part with more
    after it (even a trailing `/`) must be a folder (`file/..`, `missing/..` fail there).
    `..` for a path that leaves the checkout, None for a loop, `_NOT_A_FOLDER` for a step
    through a file or a missing folder."""
    pending, resolved, hops = path.split("/"), [], 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return ".."
            resolved.pop()
            continue
        resolved.append(part)
        joined = "/".join(resolved)
        if joined in links:
            hops += 1
            if hops > _MAX_LINK_HOPS:
                return None
            pending, resolved = links[joined].split("/") + pending, []
        elif pending and joined not in folders:
            return _NOT_A_FOLDER
    return "/".join(resolved) or "."
