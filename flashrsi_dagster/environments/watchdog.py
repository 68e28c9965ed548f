"""The shell timeout, held by the host: a watchdog over one jail's processes.

A harness's shell tool stops its commands at the protected shell timeout, but the harness is
evolvable code: an edit can raise the timeout it applies to anything. So the framework also
watches the jail from outside. Every process in the jail's PID namespace except the jail's own
(bubblewrap's, there before the run) and the agent's main processes (those whose parent is on
the host's side: the process the framework started) is a command the agent started, directly
or not; one that has lived longer than `limit` + `GRACE` is killed with SIGKILL, and so is
everything it started (a process's clock starts when its oldest watched ancestor's did, so a
long loop cannot hide behind fresh children). Each kill is recorded for the trajectory.

Background work (a process whose command has ended: its parent is now the jail's first
process) is bounded as a whole: a background process first seen while the jail had background
work at the last looks (within `GRACE`) takes the oldest clock of that work. So a process that
forks a fresh child and exits, faster than the watchdog looks (`POLL`), no longer restarts its
clock: each child is an orphan of the jail and inherits it. Background services a command
leaves running are commands too: they end at the same limit (a second one started while the
first still runs ends with the first's clock).

What it cannot bound: work the agent's main process does itself (its threads), which only
the run's timeout stops; and a fork chain that a look misses entirely for longer than `GRACE`
(every member exiting between the listing of the jail's processes and the reading of its
state, at each of `_LOOKS` listings of a look, for four looks in a row) restarts its clock:
unlikely, but a matter of timing, not of the kernel's word.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.environments.jail import Jail
from flashrsi_dagster.environments.joining import JAIL_UID

GRACE = 1.0
"""Seconds past the limit before the host kills: the harness's own timeout goes first."""
POLL = 0.25
KILLED_TYPE = "ShellTimeout"
_TICKS = os.sysconf("SC_CLK_TCK")
_MAX_COMMAND = 200
_LOOKS = 3


@dataclass(frozen=True)
class Kill:
    """A command the watchdog killed: its command line (cut) and how long it had run."""

    command: str
    seconds: float


class ShellWatchdog:
    """Kills the jail's commands that outlive `limit` seconds (plus `GRACE`) until `close()`."""

    def __init__(self, jail: Jail, limit: float) -> None:
        self.jail, self.limit = jail, limit
        self.kills: list[Kill] = []
        self._namespace = _namespace(jail.pid)
        self._own = set(self._members())  # the sandbox's own: no agent has joined yet
        self._clocks: dict[tuple[int, int], int] = {}
        """(pid, start) -> the tick its clock started: its own start or its parent's clock."""
        self._killed: set[tuple[int, int]] = set()
        self._background: int | None = None
        """The oldest clock of the jail's background processes (see `_sweep`)."""
        self._background_seen = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="shell-watchdog", daemon=True)
        self._thread.start()

    def close(self) -> list[Kill]:
        self._stop.set()
        self._thread.join()
        return self.kills

    def _watch(self) -> None:
        while not self._stop.wait(POLL):
            with contextlib.suppress(OSError):
                self._sweep()

    def _sweep(self) -> None:
        now = _uptime_ticks()
        deadline = (self.limit + GRACE) * _TICKS
        clocks: dict[tuple[int, int], int] = {}
        by_pid: dict[int, int] = {}
        # Oldest first, so that a parent's clock is known before its children's.
        orphans: list[int] = []
        for pid, parent, start in sorted(self._commands(), key=lambda p: p[2]):
            inherited = by_pid.get(parent, start)
            if parent in self._own:  # its command has ended: background work
                inherited = min(inherited, self._background or inherited)
            clock = self._clocks.get((pid, start), inherited)
            clocks[(pid, start)] = by_pid[pid] = clock
            if parent in self._own:
                orphans.append(clock)
            if now - clock > deadline and (pid, start) not in self._killed:
                command = _command(pid)
                if _kill(pid):
                    self._killed.add((pid, start))
                    self.kills.append(Kill(command, round((now - start) / _TICKS, 1)))
        self._clocks = clocks
        if orphans:
            self._background, self._background_seen = min(orphans), now
        elif now - self._background_seen > GRACE * _TICKS:
            self._background = None

    def _commands(self) -> list[tuple[int, int, int]]:
        """(pid, parent, start time in ticks) of the jail's processes that are commands."""
        found, looked = [], set(self._own)
        for _ in range(_LOOKS):  # one that exited as it was read may have left a child since
            fresh = [pid for pid in self._members() if pid not in looked]
            if not fresh:
                break
            looked.update(fresh)
            for pid in fresh:
                if _namespace(pid) != self._namespace:
                    continue
                stat = _stat(pid)
                if stat is None or (stat[0] == "Z" and not _threads_left(pid)):
                    continue
                _, parent, start = stat
                if parent in self._own or _namespace(parent) == self._namespace:
                    found.append((pid, parent, start))
        return found

    def _members(self) -> list[int]:
        """Candidates: the jail's pids cgroup when it has one (about 1 ms a look), else every
        process of the jail user (a command cannot change its user)."""
        group = self.jail.group
        if group is not None:
            with contextlib.suppress(OSError):
                return [int(line) for line in group.members.read_text().split()]
        return [pid for pid in _pids() if _owner(pid) == JAIL_UID]


def kills_metadata(limit: float, kills: list[Kill]) -> dict:
    """What a trajectory's `metadata["shell_timeout"]` says when the watchdog killed."""
    return {
        "limit": limit,
        "killed": [{"command": k.command, "seconds": k.seconds} for k in kills],
        "by": "host",
    }


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, int, int] | None:
    """State, parent and start time (ticks after boot) of `pid`."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def _threads_left(pid: int) -> bool:
    """Whether a zombie `pid` still has threads running: its first thread ended alone
    (`SYS_exit`), which shows the process as a zombie while the others go on working."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def _uptime_ticks() -> float:
    return float(Path("/proc/uptime").read_text().split()[0]) * _TICKS


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:_MAX_COMMAND]


def _kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
