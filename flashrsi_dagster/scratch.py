"""Temp data of the framework: one root, one folder per process, and the sweep of dead ones.

    <tempfile.gettempdir()>/flashrsi-<uid>/    the root: this user's, mode 0700
      <pid>-<start>/                           one process's folder (its pid and start time)
        edit-XXXXXXXX/  target-XXXXXXXX/ …      what `mkdtemp` / `scratch_dir` make
        harbor/                                local-environment trial roots
      history/<experiment key>/                the Worker's history view (Meta-Harness): kept
                                               across processes, removed when its experiment
                                               ends (promotion or abort)

The start time (clock ticks after boot, field 22 of `/proc/<pid>/stat`) makes the name unique
even when the kernel reuses a pid. A process makes its folder on first use, and before that
sweeps the root: every folder whose process is gone (a crash, a `kill -9`) is removed. So no
process writes temp data without first removing what dead ones left, and nothing happens at
import time. A clean exit removes the process's own folder; `scratch_dir` removes each folder
when its block ends. The root is per user so that no other user can plant or read folders
in it, and only this user's processes (which can be seen in /proc) own folders there.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import logging
import multiprocessing.util
import os
import re
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger("flashrsi.scratch")

_mine: dict[int, Path] = {}
"""pid -> its folder: a forked child makes its own rather than using its parent's."""
_lock = threading.Lock()


def root() -> Path:
    """The folder holding every process's temp data (made on first use, this user's only)."""
    folder = Path(tempfile.gettempdir()) / f"flashrsi-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise RuntimeError(
            f"{folder} is not a folder of this user: refusing to keep temp data there"
        )
    return folder


def process_dir() -> Path:
    """This process's folder; the first call sweeps dead processes' folders (see module doc)."""
    pid = os.getpid()
    with _lock:
        folder = _mine.get(pid)
        if folder is None:
            clean_stale()
            folder = _mine[pid] = root() / _name(pid)
            atexit.register(_remove_own, pid)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder


def mkdtemp(prefix: str) -> Path:
    """A new folder under this process's folder; the caller removes it (or exit, or a sweep)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=process_dir()))


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A new folder for the block, removed when it ends (read-only contents too)."""
    folder = mkdtemp(prefix)
    try:
        yield folder
    finally:
        _remove(folder)


def clean_stale() -> list[Path]:
    """Remove the folders of processes that are gone; returns what was removed."""
    removed = []
    for folder in sorted(root().iterdir()):
        ours = folder.is_dir() and not folder.is_symlink()
        if ours and _is_dead(folder.name) and _remove(folder):
            removed.append(folder)
    if removed:
        logger.info("removed %d temp folder(s) of dead processes", len(removed))
    return removed


SOCKET_PATH_MAX = 107
"""Bytes of an AF_UNIX socket's path (Linux's `sun_path`, less its terminating NUL)."""
SOCKET_SUFFIX = len("/pymp-12345678/listener-12345678")
"""What multiprocessing adds to the temporary folder for a socket (a fork server's)."""
SHORT_TEMP_DIRS = ("/tmp", "/var/tmp")


def short_socket_folder() -> None:
    """Have multiprocessing make the folder of this process's sockets (a fork server's) in a
    short temporary folder where the user's (`TMPDIR`) is too long for an AF_UNIX path:
    Python 3.12.1 has no such fallback, and a fork server then fails to bind its socket.
    Only that folder moves (multiprocessing removes it at exit): everything else, the
    children's `TMPDIR` included, keeps the user's. Exits with one line naming `TMPDIR` where
    no short folder can be written."""
    default = tempfile.gettempdir()
    if len(os.fsencode(default)) + SOCKET_SUFFIX <= SOCKET_PATH_MAX:
        return
    for folder in SHORT_TEMP_DIRS:
        if os.access(folder, os.W_OK | os.X_OK):
            tempfile.tempdir = folder
            try:  # made now, and kept for this process's sockets
                multiprocessing.util.get_temp_dir()
            finally:
                tempfile.tempdir = default
            return
    raise SystemExit(
        f"TMPDIR ({default}) is too long for a socket's path (AF_UNIX: {SOCKET_PATH_MAX} "
        f"bytes) and none of {', '.join(SHORT_TEMP_DIRS)} is writable: set a TMPDIR of at "
        f"most {SOCKET_PATH_MAX - SOCKET_SUFFIX} bytes"
    )


def start_time(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot), or None when there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
        return _started_without_proc(pid)
    except (OSError, IndexError):
        return None
    return fields[19]


@functools.cache
def process_space() -> str:
    """Where this process's pid means something: the host's name and a digest of its boot
    and pid namespace (a container on the host network shares the host's name, not its
    pids). What names a process by its pid (a temp file, a run's owner) carries it, so only
    a process of the same space judges whether that pid is alive."""
    name = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:40] or "host"
    where = [_read("/proc/sys/kernel/random/boot_id")]
    with contextlib.suppress(OSError):
        where.append(os.readlink("/proc/self/ns/pid"))
    return f"{name}.{hashlib.sha256(' '.join(where).encode()).hexdigest()[:8]}"


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _started_without_proc(pid: int) -> str | None:
    """Where there is no /proc, a pid that exists is taken as the same process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "0"


def _name(pid: int) -> str:
    return f"{pid}-{start_time(pid)}"


def _is_dead(name: str) -> bool:
    pid, _, started = name.partition("-")
    if not pid.isdigit() or not started:
        return False  # not a process folder: not ours to judge
    return start_time(int(pid)) != started


def _remove_own(pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits this handler; the folder is not its own
        folder = _mine.pop(pid, None)
        if folder is not None:
            _remove(folder)


def _remove(folder: Path) -> bool:
    """Remove `folder` whole; refuse if anything under it is a mount point (deleting through
    a bind mount would delete the host's files)."""
    for current, subdirs, _ in os.walk(folder):
        for name in subdirs:
            if os.path.ismount(os.path.join(current, name)):
                logger.warning("not removing %s: %s/%s is mounted", folder, current, name)
                return False
    shutil.rmtree(folder, onexc=_make_writable)
    return not folder.exists()


def _make_writable(function, path: str, error: BaseException) -> None:
    """A read-only folder (a snapshot checked out read-only) cannot be emptied: open it up
    and try again."""
    if isinstance(error, FileNotFoundError):
        return
    try:
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
        function(path)
    except OSError as exc:
        logger.warning("could not remove temp file %s: %s", path, exc)
