"""How a long-running command (`flashrsi ui`, `worker`, `offline-model`, `run` and `resume`)
stops: on SIGINT (Ctrl-C), SIGTERM (a service manager, a container runtime, Kubernetes) or
SIGHUP (its terminal gone) it stops everything it started within one bounded grace period
(`GRACE`), then exits with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 129
for SIGHUP), the status a shell gives a command a signal ended.

What a command starts runs as process groups (`Stoppable`; `deployment.reaper.Group`, whose
group also dies with the command on SIGKILL, which nothing can catch). Stopping asks each at
once with its own stop signal (Dagster and uvicorn stop in order on SIGINT, Celery on
SIGTERM) and waits for them to end; once `GRACE` seconds have passed since the stop began,
or at a further SIGINT (a second Ctrl-C), what is left is killed. `Record` notes what a
command started, so that its next start on the same home (and port) ends what a command
killed with SIGKILL left behind, and says so."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from flashrsi_dagster import scratch

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE = 10.0
"""Seconds from the stop signal until what is left of the command's children is killed: well
inside systemd's default `TimeoutStopSec` (90 s) and Kubernetes' default
`terminationGracePeriodSeconds` (30 s), so the command, not the manager, ends its children."""


_received: list[int] = []
"""The stop signals this command received, oldest first (`raise_on_stop_signals`)."""

_wakeup: dict[str, int] = {}
"""The pipe every signal is written to (`signal.set_wakeup_fd`) while a command listens: the
interpreter writes a signal's number there whichever Python handler takes it, so a stop that
another handler swallowed (Dagster's in-process execution installs its own for SIGINT and
SIGTERM, and turns them into a failed run) is still known (`stop_received`)."""


class Stopped(KeyboardInterrupt):
    """Raised in the main thread at a stop signal. A `KeyboardInterrupt`, so what already
    cleans up on Ctrl-C (Dagster marks an interrupted run failed) does so on each signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def status(self) -> int:
        return exit_status(self.signum)

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


def exit_status(signum: int) -> int:
    """The exit status of a command a signal stopped: 128 + its number."""
    return 128 + signum


def raise_on_stop_signals() -> dict[int, object]:
    """Each stop signal raises `Stopped` in the main thread, also where the command was
    started with SIGINT ignored (a background job, a test runner's child: Python then leaves
    it ignored, and children would inherit it). Once: while the command unwinds, a further
    SIGTERM or SIGHUP is let be (a manager repeating itself), a further SIGINT raises again
    (a second Ctrl-C). Returns the handlers it replaced."""
    raised = threading.Event()
    _received.clear()

    def stop(signum: int, frame: object) -> None:
        if raised.is_set() and signum != signal.SIGINT:
            return
        raised.set()
        _received.append(signum)
        raise Stopped(signum)

    _listen()
    return {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}


def _listen() -> None:
    if "read" in _wakeup or threading.current_thread() is not threading.main_thread():
        return
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    _wakeup.update(read=read, write=write, previous=previous)


def _unlisten() -> None:
    if "read" not in _wakeup:
        return
    if threading.current_thread() is threading.main_thread():
        signal.set_wakeup_fd(_wakeup["previous"])
    os.close(_wakeup.pop("read"))
    os.close(_wakeup.pop("write"))
    _wakeup.clear()


def _drain() -> None:
    """Note the stop signals written to the wakeup pipe since it was last read."""
    while "read" in _wakeup:
        try:
            numbers = os.read(_wakeup["read"], 512)
        except BlockingIOError:
            return
        _received.extend(n for n in numbers if n in STOP_SIGNALS and n not in _received)
        if len(numbers) < 512:
            return


def stop_received() -> int | None:
    """The stop signal this command received, if any. Code a `Stopped` interrupted may swallow
    it (Dagster's in-process execution turns it into a failed run), so a command asks."""
    _drain()
    return _received[0] if _received else None


def raise_if_stopped() -> None:
    """`Stopped` when a stop signal was received, even one another handler swallowed: a
    command checks between its units of work, so that a swallowed stop still ends it."""
    if (signum := stop_received()) is not None:
        raise Stopped(signum)


@contextlib.contextmanager
def stop_wins() -> Iterator[None]:
    """An error raised once a stop signal was received is the stop's doing (the run it
    interrupted failed, a write it cut short): `Stopped` is raised instead, the error chained,
    so the command exits as stopped, not as failed."""
    try:
        yield
    except Exception as exc:
        if (signum := stop_received()) is None:
            raise
        raise Stopped(signum) from exc


def release_interrupted(exc: BaseException | None) -> None:
    """Let go of what the code a stop interrupted still holds. The stop is raised at any
    bytecode, also where a context manager's `__exit__` has begun but not yet resumed its
    generator: a database transaction opened in a `with` (Dagster's SQLite storages open
    each as a generator) then stays open, its write lock held by a suspended generator that
    only the interrupted frames, kept by the traceback, refer to, and every later write of
    this process and of every other (marking the stopped runs failed) waits on it in vain.
    Clearing those frames (not the ones still executing) and collecting lets each such
    generator close, which ends its transaction."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__
    gc.collect()


def restore(handlers: dict[int, object]) -> None:
    """Put back the handlers `raise_on_stop_signals` replaced, and stop listening."""
    _put_back(handlers)
    if handlers:
        _unlisten()


def _put_back(handlers: dict[int, object]) -> None:
    for signum, handler in handlers.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]


class Stoppable(Protocol):
    """A child process group of a command."""

    name: str

    def stop(self) -> None:
        """Ask it to stop (its stop signal); returns at once."""

    def stopped(self) -> bool:
        """Whether it has ended."""

    def kill(self) -> None:
        """SIGKILL whatever is left of it, and reap it."""


def stop_all(children: Sequence[Stoppable], grace: float = GRACE) -> None:
    """Ask each of `children` to stop, newest first, all at once (each stops its own work, and
    each gets the whole grace), and kill what is left once `grace` seconds have passed.
    Meanwhile (in the main thread) SIGINT, a second Ctrl-C, kills what is left at once; the
    other stop signals are let be (a manager repeating itself)."""
    hurry = threading.Event()

    def during_stop(signum: int, frame: object) -> None:
        if signum == signal.SIGINT:
            hurry.set()

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {signum: signal.signal(signum, during_stop) for signum in STOP_SIGNALS}
    try:
        deadline = time.monotonic() + grace
        for child in reversed(children):
            child.stop()
        while not all(child.stopped() for child in children):
            if time.monotonic() > deadline or hurry.wait(0.05):
                break
        for child in reversed(children):
            child.kill()
    finally:
        _put_back(handlers)


def supervise(record: Record, start: Callable[[list[Stoppable]], int]) -> int:
    """The life of a command that starts children: `record` claimed, then `start(started)`,
    which starts its children into `started` and waits; returns its status, or at a stop
    signal 128 + its number. Either way every child is stopped (`stop_all`) before it returns."""
    handlers = raise_on_stop_signals()
    started: list[Stoppable] = []
    try:
        record.claim()
        return start(started)
    except Stopped as stop:
        record.say(f"flashrsi {record.command}: {stop}; stopping what it started")
        return stop.status
    finally:
        stop_all(started)
        record.release()
        restore(handlers)


class Record:
    """`<folder>/<command>-<process space>-<pid>.json`: this process's identity (`scratch`'s
    process space: a home shared by machines holds theirs too), the `key` two live ones of its
    kind may not share (a port, a worker's name; none: ""), and the process groups it started;
    removed when it stops. `claim` ends what a dead one of its kind left running."""

    def __init__(self, folder: Path, command: str, key: str = "", say: Callable = print):
        self.folder, self.command, self.key, self.say = Path(folder), command, key, say
        # the home may be shared by machines: a record is only read where its pids mean something
        self.space = scratch.process_space()
        self.path = self.folder / f"{command}-{self.space}-{os.getpid()}.json"
        self._groups: list[dict] = []

    def claim(self) -> None:
        """End what earlier commands of this kind, now dead, left (saying what), and record
        this one; `CommandRunning` when a live one holds the same key."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for path in sorted(self.folder.glob(f"{self.command}-{self.space}-*.json")):
            try:
                earlier = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if _alive(earlier["pid"], earlier["started"]):
                if self.key and earlier.get("key") == self.key:
                    raise CommandRunning(f"{_title(self.command, earlier)} is running")
                continue
            self.say(_cleaned(self.command, earlier))
            path.unlink(missing_ok=True)
        self._write()

    def add(self, name: str, leader: int) -> None:
        """Note the process group `leader` leads (the command's child `name`)."""
        self._groups.append({"name": name, "pid": leader, "started": scratch.start_time(leader)})
        self._write()

    def release(self) -> None:
        self.path.unlink(missing_ok=True)

    def _write(self) -> None:
        mine = {"pid": os.getpid(), "started": scratch.start_time(os.getpid()), "key": self.key}
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({**mine, "groups": self._groups}))
        os.replace(temporary, self.path)


class CommandRunning(RuntimeError):
    """Another command of this kind and key runs on this home."""


def _alive(pid: int, started: str | None) -> bool:
    return started is not None and scratch.start_time(pid) == started


def _title(command: str, record: dict) -> str:
    key = f" ({record['key']})" if record.get("key") else ""
    return f"a previous `flashrsi {command}`{key}, pid {record['pid']},"


def _cleaned(command: str, record: dict) -> str:
    """Kill each group the dead command recorded that still has members; say what."""
    killed = []
    for group in record.get("groups", []):
        members = _members(group["pid"], group["started"])
        if members:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group["pid"], signal.SIGKILL)
            killed.append(f"{group['name']} ({len(members)} processes)")
    left = f"killed what was left: {', '.join(killed)}" if killed else "nothing of it was running"
    return f"{_title(command, record)} ended without stopping: {left}"


def _members(leader: int, started: str | None) -> list[int]:
    """The processes in `leader`'s group. Its id is not reused while the group has members;
    a live process under that id that started otherwise leads a new group, not ours."""
    now = scratch.start_time(leader)
    if now is not None and now != started:
        return []
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == leader and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def say(line: str) -> None:
    """What a command says about its own start and stop: on stderr, beside its log."""
    print(line, file=sys.stderr, flush=True)
