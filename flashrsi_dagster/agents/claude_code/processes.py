"""The processes of one Claude Code run, found by an environment entry only that run sets.

The SDK starts the CLI without a process group of its own, and the CLI starts shells, hooks and
sub-processes of its tools. Every one of them inherits the run's `CLAUDE_CONFIG_DIR`, which
names the run's private temporary folder, so scanning `/proc` for that entry (and for
descendants, in case a tool rewrote its environment) finds exactly the run's processes. Without
`/proc` (not Linux) nothing is found and the SDK's own shutdown is all there is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import defaultdict
from pathlib import Path

PROC = Path("/proc")
POLL_SECONDS = 0.05


def run_processes(marker: bytes) -> list[int]:
    """Live processes whose environment holds the entry `marker`, and their descendants."""
    parents: dict[int, int] = {}
    seeds: list[int] = []
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if not entry.name.isdigit():
            continue
        status = _state_and_parent(int(entry.name))
        if status is None or status[0] == "Z":
            continue
        parents[int(entry.name)] = status[1]
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or another user's process
            continue
        if marker in environ.split(b"\0"):
            seeds.append(int(entry.name))
    children: dict[int, list[int]] = defaultdict(list)
    for pid, parent in parents.items():
        children[parent].append(pid)
    found: set[int] = set()
    stack = seeds
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children[pid])
    found.discard(os.getpid())
    return sorted(found)


def stop_processes(marker: bytes, grace: float = 1.0) -> list[int]:
    """SIGTERM the run's processes (the CLI cleans up its tools), SIGKILL what outlives `grace`.

    Returns the processes that were found running."""
    found = run_processes(marker)
    _signal(found, signal.SIGTERM)
    deadline = time.monotonic() + grace
    alive = [pid for pid in found if _alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        alive = [pid for pid in alive if _alive(pid)]
    _signal(alive, signal.SIGKILL)
    return found


def _state_and_parent(pid: int) -> tuple[str, int] | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": the name may hold spaces
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    """Zombies count as gone: PID 1 in a container may never reap an orphan."""
    status = _state_and_parent(pid)
    return status is not None and status[0] != "Z"


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
