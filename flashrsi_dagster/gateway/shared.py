"""`SharedSpend`: what the other gateways on one experiment's call log (other processes, other
hosts sharing the experiment home) have spent and hold in flight, per (experiment, role), so
that a role's caps hold across all of them.

    logs/gateway.jsonl                  the call log: what every call used (read incrementally)
    logs/gateway.reserved/
      <space>.<pid>-<start>.<n>         one gateway's calls in flight: [[experiment, role, tokens]]

Every method but `close` runs under the call log's exclusive flock (`CallLog.locked`): reading
the others' spends and reservations, deciding, and publishing one's own reservation is one
step across processes, and so is appending a call's line and releasing its reservation: a
call's tokens are always in one place or the other, never in neither.

A gateway holds an exclusive flock on its own reservation file for its life. A file whose lock
can be taken belongs to a gateway that is gone (a crash, a SIGKILL: the kernel drops the lock
with the process; on a shared home, a dead host's lock goes when the file server lets it go),
and is removed. Its name says whose it is: the process's space, pid and start time (see
`scratch.py`), and which of the process's gateways. A file of this very process is never
tested: where flock is emulated with POSIX locks (NFS), a process's own locks do not conflict,
and closing a probe would drop them.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from flashrsi_dagster.gateway.metering import Tokens, Usage
from flashrsi_dagster.records.atomic import PlantedFileError, open_own
from flashrsi_dagster.scratch import process_space, start_time

logger = logging.getLogger("flashrsi.gateway")

Key = tuple[str, str]
"""(experiment, role)"""

_serial = itertools.count(1)
MAX_RESERVED_BYTES = 1 << 20
"""A reservation file is read up to this (a gateway holds a few short entries)."""


class SharedSpend:
    def __init__(self, log_path: Path) -> None:
        pid = os.getpid()
        self.folder = log_path.with_suffix(".reserved")
        self._process = f"{process_space()}.{pid}-{start_time(pid)}"
        self.name = f"{self._process}.{next(_serial)}"
        self._offset = 0  # the log is read up to here
        self.clean_end = True
        """The log ends with a whole line (not the torn tail of a writer that crashed)."""
        self._spent: dict[Key, Usage] = {}  # the others' calls, as logged
        self._held: dict[Key, int] = {}  # this gateway's calls in flight, as published
        self._fd: int | None = None  # its reservation file, flocked while it lives
        self._size = 0  # the file's length

    # -- the call log ----------------------------------------------------------------------

    def read(self, log_fd: int) -> None:
        """Count the lines appended since the last read (the first read: the whole log,
        what earlier processes spent)."""
        size = os.fstat(log_fd).st_size
        if size < self._offset:  # the log was cut short or replaced: count it afresh
            self._offset, self._spent = 0, {}
        if size == self._offset:
            return
        data = _pread(log_fd, size - self._offset, self._offset)
        self._offset += len(data)
        self.clean_end = data.endswith(b"\n")
        for line in data.split(b"\n"):
            self._count(line)

    def appended(self, size: int) -> None:
        """This gateway appended `size` bytes right after the last read: they are its own."""
        self._offset += size
        self.clean_end = True

    def _count(self, line: bytes) -> None:
        """Unreadable lines (a torn line after a crash) are skipped."""
        try:
            call = json.loads(line)
            key = (call["experiment"], call["role"])
            tokens = Tokens(int(call["input_tokens"]), int(call["output_tokens"]))
        except (ValueError, KeyError, TypeError):
            return
        if not isinstance(key[0], str) or not isinstance(key[1], str):
            return
        if call.get("status") is None or not (tokens.input or tokens.output):
            return
        self._spent.setdefault(key, Usage()).add(tokens, call.get("cost_usd"))

    # -- reservations ----------------------------------------------------------------------

    def others(self, key: Key) -> tuple[Usage | None, int]:
        """What the other gateways spent for `key`, and the tokens their calls in flight may
        still use."""
        held = sum(entries.get(key, 0) for entries in self._reservations(sweep=False))
        return self._spent.get(key), held

    def sweep(self) -> None:
        """Remove the files of every gateway that is gone, those holding nothing included
        (the calls' path tests only the files that hold something)."""
        for _ in self._reservations(sweep=True):
            pass

    def hold(self, key: Key, tokens: int) -> None:
        """Publish a call of this gateway that may use up to `tokens`."""
        if tokens > 0:
            self._held[key] = self._held.get(key, 0) + tokens
            self._publish()

    def release(self, key: Key, tokens: int) -> None:
        """The call is logged (its spend is in the log now) or will never be."""
        if tokens <= 0 or key not in self._held:
            return
        left = self._held.pop(key) - tokens
        if left > 0:
            self._held[key] = left
        self._publish()

    def close(self) -> None:
        if self._fd is not None:
            (self.folder / self.name).unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None

    def _publish(self) -> None:
        if self._fd is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / self.name
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._size = 0
        if not self._held:  # nothing in flight: an empty file, whatever came before
            os.ftruncate(self._fd, 0)
            self._size = 0
            return
        data = json.dumps([[e, r, n] for (e, r), n in self._held.items()]).encode()
        # Padded with blanks rather than cut short (JSON ignores them): a truncate costs more.
        os.pwrite(self._fd, data.ljust(self._size), 0)
        self._size = max(self._size, len(data))

    def _reservations(self, *, sweep: bool) -> Iterator[dict[Key, int]]:
        """The reservations of the other gateways' files that hold something (`sweep`: every
        file, tested)."""
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.name == self.name:
                continue
            try:
                fd = _open(entry.path)
            except FileNotFoundError:
                continue
            except PlantedFileError as exc:  # no gateway's: nothing it says is counted
                logger.warning("gateway: ignored %s", exc)
                continue
            try:
                size = min(os.fstat(fd).st_size, MAX_RESERVED_BYTES)
                data = _pread(fd, size, 0).strip()
                if not (data or sweep) or self._alive(entry.name, fd):
                    yield _entries(data)
                    continue
                with contextlib.suppress(OSError):  # gone all the same: its calls are not
                    os.unlink(entry.path)
                    logger.info("gateway: removed a gone gateway's reservations: %s", entry.name)
            finally:
                os.close(fd)

    def _alive(self, name: str, fd: int) -> bool:
        """Whether the gateway of a reservation file lives (see the module doc)."""
        if name.startswith(self._process + "."):
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held; or it cannot be tested here (another user's, on NFS): counted
            return True
        return False


def _open(path: str) -> int:
    """A POSIX lock (NFS's flock) needs write access; another user's file is read only. Never
    through a link, never a FIFO (`open_own`): the folder is in a shared home."""
    try:
        return open_own(Path(path), os.O_RDWR)
    except PermissionError:
        return open_own(Path(path), os.O_RDONLY)


def _entries(data: bytes) -> dict[Key, int]:
    held: dict[Key, int] = {}
    try:
        entries = json.loads(data) if data else []
        for experiment, role, tokens in entries:
            held[experiment, role] = held.get((experiment, role), 0) + int(tokens)
    except (ValueError, TypeError):
        return {}  # written whole under the log's lock: only a writer's crash leaves this
    return held


def _pread(fd: int, size: int, offset: int) -> bytes:
    parts = []
    while size > 0 and (part := os.pread(fd, size, offset)):
        parts.append(part)
        size, offset = size - len(part), offset + len(part)
    return b"".join(parts)
