"""The coordinated proposer (`proposer: coordinated`): what the host needs to keep one Worker
session's k candidates apart. The session writes each candidate into a folder of its own; the
host, not the Worker, turns each folder into a candidate (its own commit, its own evaluation)
and rejects a folder identical to a sibling's, so a round costs at most k evaluations and
never pays twice for one tree."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from flashrsi_dagster.snapshots import HISTORY_DIR


def folder_digest(folder: Path) -> str:
    """A digest of a candidate folder's content: paths, file bytes and modes, symlink targets
    (never followed); the history folder is left out, as it is of every commit."""
    digest = hashlib.sha256()
    for current, dirs, names in os.walk(folder, followlinks=False):
        rel = Path(current).relative_to(folder)
        dirs[:] = sorted(d for d in dirs if not (rel == Path(".") and d == HISTORY_DIR))
        for name in sorted([*names, *(d for d in dirs if (Path(current) / d).is_symlink())]):
            path = Path(current) / name
            digest.update((rel / name).as_posix().encode() + b"\0")
            if path.is_symlink():
                digest.update(b"link\0" + os.readlink(path).encode() + b"\0")
            elif path.is_file():
                digest.update(b"file\0%o\0" % (path.stat().st_mode & 0o111))
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def folder_problem(folder: Path) -> str | None:
    """Why a candidate folder cannot be committed: the Worker replaced it (a symlink would
    have the host commit whatever it points at, outside the edit folder)."""
    if folder.is_symlink():
        return f"candidate folder {folder.name}/ was replaced by a symlink: nothing is committed"
    if not folder.is_dir():
        return f"candidate folder {folder.name}/ is gone or no longer a folder"
    return None


def twin_reason(twin: str) -> str:
    return (
        f"identical to candidate {twin}'s folder: the candidates of a coordinated round must "
        "differ, so it is not evaluated twice"
    )
