"""Crash-safe file writes: a reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path


class PlantedFileError(OSError):
    """A file the framework keeps in an experiment folder (a lock, the chain, a log) is a link
    or a special file: something other than the framework put it there."""


def open_own(path: Path, flags: int, mode: int = 0o644) -> int:
    """`os.open` for a file the framework itself keeps under a home (made if `os.O_CREAT`):
    never through a symbolic link (root writing or truncating where the link points: a home
    is shared with containers and other machines, whose agents may run unconfined), never a
    FIFO or device (an open or a read that never returns). Raises `PlantedFileError`."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise PlantedFileError(
            errno.ELOOP,
            f"{path} is a symbolic link; the framework writes no file of an "
            "experiment home through a link (remove it)",
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PlantedFileError(
            errno.EINVAL,
            f"{path} is not a regular file; the framework keeps only plain files there (remove it)",
        )
    os.set_blocking(fd, True)
    return fd


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and `os.replace`.

    The temp file is fsynced before the rename and the folder after it, so a crash (even a
    SIGKILL or power loss) leaves either the previous content or the complete new content.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
