"""One step of an experiment at a time, whichever process asks: the step lock.

Every step reads the records, decides whether it is its turn, and writes; two processes
doing that at once (a run launched from the UI beside the driver's, two launches of one
round) would both find it their turn — two sealed tests, two Worker edits of one round, a
promotion changed while the test of the old one runs. So a step holds an exclusive `flock`
on `<experiment>/step.lock` from its order check to its last write; another step of the same
experiment waits for it and then reads the records afresh. Reentrant within one holder (a
step made of steps), released when the step ends or its process dies. Reading — planning,
the sensor, a summary — takes no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_FILE = "step.lock"
"""Beside the records, outside the integrity chain (it holds nothing)."""


class StepLock:
    def __init__(self, root: Path) -> None:
        self.path = Path(root) / LOCK_FILE
        self._thread = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextlib.contextmanager
    def held(self, waiting: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold the lock for the block; `waiting` is called once if another holder has it."""
        with self._thread:
            if self._depth == 0:
                self._fd = _acquire(self.path, waiting)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    os.close(self._fd)  # releases the flock
                    self._fd = None


def _acquire(path: Path, waiting: Callable[[], None] | None) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd
