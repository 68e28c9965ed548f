"""Writing into an experiment folder through its integrity chain (format in `chain.py`).

Every write holds the experiment's lock (`flock` on the chain file, plus a thread lock) from
start to end, in this order: (1) its entry is appended to the chain and fsynced, (2) the head
is rewritten and fsynced, (3) the file is written (atomically replaced, or appended and
fsynced). A crash therefore leaves at most the last entry in flight, and only as `in_flight`
describes. The next writer to take the lock settles it: a torn chain line or a torn appended
line is cut, and an entry whose file did not change gets a `revert` entry after it. With the
lock held, the chain must end where the entries end, before and after an entry is written:
bytes anything else appended meanwhile are refused at that write, named.

Per process, each chain's replay, its last line (the in-process anchor) and a running sha256
of every file being appended to are kept in memory, so a write reads only what other
processes appended since; the full check (`verify`) is for resume, promotion and the test.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flashrsi_dagster.records.atomic import fsync_dir, open_own, write_bytes_atomic
from flashrsi_dagster.records.chain import (
    CHAIN,
    GENESIS,
    HEAD,
    Entry,
    FileState,
    IntegrityError,
    Replay,
    head_line,
    in_flight,
    read_head,
    state_of,
)
from flashrsi_dagster.records.verify import (
    Anchor,
    FileId,
    file_id,
    file_problem,
    problems_of,
    rewritten,
    unchained_problem,
)


@dataclass
class _Live:
    """One chain as this process knows it."""

    pid: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    replay: Replay = field(default_factory=Replay)
    offset: int = 0
    last_line: bytes = b""
    file: FileId | None = None
    """The chain file last read (device, inode): named when another is found in its place."""
    settled: bool = False
    running: dict[str, tuple[int, Any]] = field(default_factory=dict)
    """Path -> (size, sha256 object) of files this process appends to."""


_lives: dict[str, _Live] = {}
_lives_lock = threading.Lock()


def _live(chain: Path) -> _Live:
    with _lives_lock:
        live = _lives.get(str(chain))
        if live is None or live.pid != os.getpid():  # a forked child starts afresh
            live = _lives[str(chain)] = _Live(os.getpid())
        return live


class Journal:
    """The one way the framework writes files into the experiment folder at `root`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.chain, self.head = self.root / CHAIN, self.root / HEAD

    # -- writes ---------------------------------------------------------------------------

    def write_bytes(self, path: Path, data: bytes) -> None:
        """Replace `path` whole with `data`."""
        path, rel = self._resolve(path)
        digest = hashlib.sha256(data).hexdigest()
        with self._locked() as (live, fd):
            self._enter(live, fd, op="write", path=rel, sha256=digest, size=len(data))
            self._do(live, lambda: write_bytes_atomic(path, data))
            live.running.pop(rel, None)

    def append_line(self, path: Path, line: bytes) -> None:
        """Append one line (ending in a newline) to `path` and fsync it."""
        path, rel = self._resolve(path)
        with self._locked() as (live, fd):
            size, digest = self._running(live, path, rel)
            after = digest.copy()
            after.update(line)
            new_size = size + len(line)
            self._enter(live, fd, op="append", path=rel, sha256=after.hexdigest(), size=new_size)
            self._do(live, lambda: _append(path, line))
            live.running[rel] = (new_size, after)

    def move(self, source: Path, path: Path) -> None:
        """Rename `source` to `path` (both inside the folder). `path` must not exist: records
        are kept, and a rename onto one would delete it (`FileExistsError`, nothing done)."""
        (source, src), (path, rel) = self._resolve(source), self._resolve(path)
        with self._locked() as (live, fd):
            if os.path.lexists(path):
                raise FileExistsError(f"{rel} exists: moving {src} there would delete it")
            self._enter(live, fd, op="move", path=rel, source=src)
            self._do(live, lambda: _rename(source, path))
            live.running.pop(src, None)
            live.running.pop(rel, None)

    def remove(self, path: Path) -> None:
        path, rel = self._resolve(path)
        with self._locked() as (live, fd):
            if live.replay.expected(rel) is None and not path.exists():
                return  # nothing there, and the chain agrees
            self._enter(live, fd, op="remove", path=rel)
            self._do(live, lambda: _unlink(path))
            live.running.pop(rel, None)

    # -- checks ---------------------------------------------------------------------------

    def verify(self) -> None:
        """Raise `IntegrityError` naming every file that does not match the chain."""
        live = _live(self.chain)
        with live.lock, _shared_lock(self.chain):
            problems = problems_of(self.root, _anchor(live))
        if problems:
            raise IntegrityError(problems)

    def check(self, path: Path) -> None:
        """Raise `IntegrityError` unless the one file `path` holds what the chain says."""
        path, rel = self._resolve(path)
        with self._locked() as (live, _):
            problem = file_problem(self.root, rel, live.replay, "settled")
        if problem:
            raise IntegrityError([problem])

    # -- the protocol ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[_Live, int]]:
        live = _live(self.chain)
        with live.lock:
            self.chain.parent.mkdir(parents=True, exist_ok=True)
            fd = open_own(self.chain, os.O_RDWR | os.O_CREAT | os.O_APPEND)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._catch_up(live, fd)
                yield live, fd
            finally:
                os.close(fd)

    def _catch_up(self, live: _Live, fd: int) -> None:
        """Read what others appended since; refuse a chain rewritten under this process."""
        size, anchor = os.fstat(fd).st_size, _anchor(live)
        if anchor is not None:
            start = live.offset - len(live.last_line)
            if size < live.offset or os.pread(fd, len(live.last_line), start) != live.last_line:
                raise IntegrityError([rewritten(anchor, os.pread(fd, size, 0), file_id(fd))])
        live.file = file_id(fd)
        if size > live.offset:
            data = os.pread(fd, size - live.offset, live.offset)
            for line in data[: data.rfind(b"\n") + 1].splitlines(keepends=True):
                try:
                    live.replay.apply(Entry.parse(line))
                except ValueError as exc:
                    seq = (live.replay.last.seq if live.replay.last else 0) + 1
                    raise IntegrityError([f"{CHAIN}: entry {seq} broken: {exc}"]) from None
                live.offset += len(line)
                live.last_line = line
            live.settled = False
        if not live.settled:
            self._settle(live, fd, torn=size - live.offset)
            live.settled = True

    def _settle(self, live: _Live, fd: int, torn: int) -> None:
        """Finish the in-flight entry a dead (or failed) writer left, as `in_flight` allows."""
        if torn:
            os.ftruncate(fd, live.offset)  # a chain line the crash cut: its write never began
        replay, last = live.replay, live.replay.last
        stance = in_flight(replay, read_head(self.head))
        if stance == "refused":
            raise IntegrityError(problems_of(self.root) or [f"{HEAD}: does not match {CHAIN}"])
        if last is None:
            unchained = unchained_problem(self.root)
            if unchained:
                raise IntegrityError([unchained])
            return
        if last.op == "revert":  # it changes no file: only its head may be missing
            if stance == "not begun":
                _write_head(self.head, last)
            return
        paths = replay.paths(last)
        if stance == "done" and last.op == "append":
            _cut_torn(self.root / last.path, replay.prior(last.path), replay.expected(last.path))
        states = {p: state_of(self.root / p) for p in paths}
        if stance == "done" and all(states[p] == replay.expected(p) for p in paths):
            return
        if any(states[p] != replay.prior(p) for p in paths):
            wrong = [file_problem(self.root, p, replay, stance) for p in paths]
            raise IntegrityError([problem for problem in wrong if problem])
        self._enter(live, fd, op="revert", path=last.path, reverts=last.seq)
        for p in paths:
            live.running.pop(p, None)

    def _enter(self, live: _Live, fd: int, **fields) -> Entry:
        """Append the next entry (fsynced), then point the head at it."""
        last = live.replay.last
        entry = Entry(
            seq=last.seq + 1 if last else 1,
            prev=last.hash if last else GENESIS,
            at=datetime.now(UTC).isoformat(timespec="milliseconds"),
            **fields,
        ).sealed()
        line = entry.line()
        _refuse_foreign(fd, live.offset, entry.seq)
        live.settled = False  # until the entry, head and file are all written
        _write_all(fd, line)
        os.fsync(fd)
        _refuse_foreign(fd, live.offset + len(line), entry.seq, line)
        if entry.seq == 1:
            fsync_dir(self.chain.parent)
        live.replay.apply(entry)
        live.offset += len(line)
        live.last_line = line
        _write_head(self.head, entry)
        return entry

    def _do(self, live: _Live, operation: Callable[[], None]) -> None:
        operation()
        live.settled = True

    def _running(self, live: _Live, path: Path, rel: str) -> tuple[int, Any]:
        """The running digest of a file about to be appended to; it must match the chain,
        or the append would vouch for content the framework never wrote."""
        cached = live.running.get(rel)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            size = None
        # As this process left it, and the chain still says so (no other process wrote it):
        if cached and live.replay.expected(rel) == FileState(cached[1].hexdigest(), size or 0):
            return cached
        problem = file_problem(self.root, rel, live.replay, "settled")
        if problem:
            raise IntegrityError([f"{problem}; refusing to append to it"])
        digest = hashlib.sha256(path.read_bytes() if size is not None else b"")
        return size or 0, digest

    def _resolve(self, path: Path) -> tuple[Path, str]:
        """The file's path (its folder resolved) and its name relative to the root."""
        path = Path(path)
        path = path.parent.resolve() / path.name
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            raise ValueError(f"{path} is outside the experiment folder {self.root}") from None
        if rel in (CHAIN, HEAD):
            raise ValueError(f"{rel} is the chain itself")
        return path, rel


def _refuse_foreign(fd: int, end: int, seq: int, line: bytes = b"") -> None:
    """With the lock held, the chain ends where this process's replay (and `line`, once
    written) ends: any other length is bytes no framework writer put there, written
    while it held the lock (a descriptor of another file gone astray, say). Refused at
    once, naming them, rather than at the next write as a chain rewritten under it."""
    size = os.fstat(fd).st_size
    if size == end:
        return
    start = end - len(line)
    foreign = os.pread(fd, max(size - start, 0), start).replace(line, b"", 1)
    when = "as it was written" if line else "before it was written"
    raise IntegrityError(
        [
            f"{CHAIN}: {size - end:+d} byte(s) at byte {start} {when} (entry {seq}): "
            f"{foreign[:120]!r}: something other than the framework writes the chain"
        ]
    )


def _anchor(live: _Live) -> Anchor | None:
    last = live.replay.last
    return Anchor(last.seq, live.last_line, live.offset, live.file) if last else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_head(head: Path, entry: Entry) -> None:
    created = not head.exists()
    fd = open_own(head, os.O_RDWR | os.O_CREAT)
    try:
        line = head_line(entry)
        os.pwrite(fd, line, 0)
        os.ftruncate(fd, len(line))
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(head.parent)


def _append(path: Path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not path.exists()
    fd = open_own(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        _write_all(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)


def _rename(source: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, path)
    fsync_dir(path.parent)
    if source.parent != path.parent:
        fsync_dir(source.parent)


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)


def _cut_torn(path: Path, before: FileState | None, after: FileState | None) -> None:
    """Cut an appended line the crash left unfinished, back to the old content."""
    old, new = before.size if before else 0, after.size if after else 0
    with contextlib.suppress(FileNotFoundError):
        if old < path.stat().st_size < new:
            os.truncate(path, old)


@contextlib.contextmanager
def _shared_lock(chain: Path) -> Iterator[None]:
    """Hold off writers (of any process) while the folder is read."""
    try:
        fd = open_own(chain, os.O_RDONLY)
    except FileNotFoundError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)
