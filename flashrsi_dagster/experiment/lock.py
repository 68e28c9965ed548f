"""One step of an experiment at a time, whichever process asks: the step lock.

Every step reads the records, decides whether it is its turn, and writes; two processes
doing that at once (a run launched from the UI beside the driver's, two launches of one
round) would both find it their turn — two sealed tests, two Worker edits of one round, a
promotion changed while the test of the old one runs. So a step holds an exclusive `flock`
on `<experiment>/step.lock` from its order check to its last write; another step of the same
experiment waits for it and then reads the records afresh. Reentrant within one holder (a
step made of steps), released when the step ends or its process dies. Reading — planning,
the sensor, a summary — takes no lock.

Steps that may run side by side (the candidates of one round, each writing only its own
records) hold the step lock shared, and their own candidate's lock exclusively: two runs of
one candidate still wait for each other, and no sequential step (a diagnosis, a decision, a
promotion, a roll-back) runs while any candidate does. What candidates share (the ledger)
has a lock of its own, held only for the write.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from flashrsi_dagster.records.atomic import open_own

LOCK_FILE = "step.lock"
"""Beside the records, outside the integrity chain (it holds nothing)."""
LOCKS = "locks"
"""The folder of the finer locks (a candidate's, the ledger's), beside `step.lock`."""


class StepLock:
    """A `flock` on one file, held per thread: exclusive by default, or shared by steps that
    may run side by side (the candidates of one round), which keeps every exclusive holder
    out meanwhile. Reentrant within one thread; a thread holding it shared cannot deepen it
    to exclusive (flock would wait for itself)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    @classmethod
    def of(cls, root: Path) -> StepLock:
        """The experiment's step lock."""
        return cls(Path(root) / LOCK_FILE)

    @contextlib.contextmanager
    def held(
        self, waiting: Callable[[], None] | None = None, *, shared: bool = False
    ) -> Iterator[None]:
        """Hold the lock for the block; `waiting` is called once if another holder has it."""
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            local.fd, local.shared = _acquire(self.path, waiting, shared), shared
        elif local.shared and not shared:
            raise RuntimeError(f"{self.path} is held shared here: it cannot become exclusive")
        local.depth = depth + 1
        try:
            yield
        finally:
            local.depth -= 1
            if local.depth == 0:
                os.close(local.fd)  # releases the flock
                local.fd = None


def _acquire(path: Path, waiting: Callable[[], None] | None, shared: bool) -> int:
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_own(path, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


DRIVER_LOCK = "driver.lock"
"""Held by the one process driving the experiment (`flashrsi run` / `resume`), for as long as
it drives; the round driver sensor leaves an experiment alone while it is held."""


class DriverBusy(RuntimeError):
    """Another process drives the experiment."""


@contextlib.contextmanager
def driving(root: Path, patience: float = 5.0) -> Iterator[None]:
    """Hold the experiment's driver lock for the block, or raise `DriverBusy` when another
    process holds it for `patience` seconds (a sensor's look holds it a moment)."""
    path = Path(root) / LOCKS / DRIVER_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_own(path, os.O_RDWR | os.O_CREAT)
    try:
        deadline = time.monotonic() + patience
        while not _took(fd, fcntl.LOCK_EX):
            if time.monotonic() > deadline:
                raise DriverBusy(
                    f"{path} is held: another process drives this experiment{_holder(fd)}"
                )
            time.sleep(0.1)
        _sign(fd)
        yield
    finally:
        os.close(fd)


def _sign(fd: int) -> None:
    """Write who drives into the lock file, so a refused driver can name it: the lock is the
    truth, the file's words only what its last holder said (read only while one holds it)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {_command_line()}\n".encode(), 0)


def _command_line() -> str:
    """The program and its subcommand only (`flashrsi resume`): the rest of a command line
    may hold a key (`--agent.llm.api_key`), and nothing writes a key."""
    if not sys.argv:
        return ""
    words = [Path(sys.argv[0]).name, *sys.argv[1:2]]
    return " ".join(w for w in words if w.isidentifier() or w == words[0])


def _holder(fd: int) -> str:
    said = os.pread(fd, 200, 0).decode(errors="replace").strip()
    pid, _, command = said.partition(" ")
    if not pid.isdigit():
        return ""
    return f" (process {pid}" + (f": {command}" if command else "") + ")"


def driven(root: Path) -> bool:
    """Whether a process holds the experiment's driver lock now."""
    path = Path(root) / LOCKS / DRIVER_LOCK
    if not path.exists():
        return False
    fd = open_own(path, os.O_RDWR)
    try:
        return not _took(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)


def _took(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
