"""The cgroups of a jail: a fork bomb in one run stops at `MAX_PIDS` processes instead of
taking every pid on the machine (`RLIMIT_NPROC` cannot do it: it counts per user, and every
jail runs as the same one), its processes together hold at most `MAX_MEMORY_BYTES` of
memory, their `/tmp` included (past it the kernel reclaims, then kills inside the jail only:
without it a run could take the memory the framework, its gateway and the other runs live in,
and the machine's OOM killer would pick among all of them), and they share one jail's part of
the CPU (`CPU_WEIGHT`), however many they are.

The jail's own processes are started inside the groups; a process that joins the jail moves
itself in (writing `0` to each group's `cgroup.procs` through descriptors opened before it
left the host's mount namespace) before it runs anything of the agent's. cgroup v1 (its `pids`,
`memory` and `cpu` hierarchies) and cgroup v2 are both supported; where a controller cannot be
written (a container that delegates none), jails run without its limit and the framework says
so once in its log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from pathlib import Path

from flashrsi_dagster.scratch import process_space, start_time

MAX_PIDS = 512
MAX_MEMORY_BYTES = 4 << 30
"""Per jail: an agent CLI and its commands need well under 1 GiB; a run's `/tmp` (512 MiB of
RAM) counts here too."""
_ROOT = Path("/sys/fs/cgroup")
CPU_WEIGHT = {"cpu.shares": 1024, "cpu.weight": 100}
"""Every jail the kernel's default weight, in a group of its own under one parent: the
scheduler shares the CPU between jails, not between their processes, so a run spinning 512
processes gets no more of it than a run with one (its sibling candidates' rollouts would
otherwise slow to their timeouts), and all jails together compete with the framework's
own processes as one."""
_LIMIT_FILES = {
    "pids": ("pids.max", "pids.max"),
    "memory": ("memory.limit_in_bytes", "memory.max"),
    "cpu": ("cpu.shares", "cpu.weight"),
}
"""Per controller, its limit's file in cgroup v1 and in v2."""
_NO_SWAP = ("memory.memsw.limit_in_bytes", "memory.swap.max")
"""Swap past the limit is memory taken from the machine all the same (set where they exist)."""

logger = logging.getLogger("flashrsi.environments")
_warned: set[str] = set()


def owner() -> str:
    """This process as a group's name holds it, `<pid>.<start time>`: a pid alone could be
    reused (see `_owner_gone`)."""
    return f"{os.getpid()}.{start_time(os.getpid())}"


class JailGroup:
    """One jail's groups. `procs`: the files a process writes its pid (or `0`) to, to join
    every one; `members`: the file listing the jail's processes (the pids group's)."""

    def __init__(self, name: str, folders: dict[str, Path]) -> None:
        self.name, self.folders = name, folders
        self.procs = tuple(folder / "cgroup.procs" for folder in dict.fromkeys(folders.values()))
        self.members = self.procs[0]

    @classmethod
    def create(cls, name: str) -> JailGroup | None:
        """The groups `<name>@<process space>` (`name`: `jail-<owner()>-…`), made under
        each controller's folder after sweeping it; None where no `pids` group could be
        made."""
        folders: dict[str, Path] = {}
        name = f"{name}@{process_space()}"  # its pid means something in this space only
        for controller, (parent, limit_file) in _parents().items():
            _sweep(parent)
            folder = parent / name
            value = {"pids": MAX_PIDS, "memory": MAX_MEMORY_BYTES}.get(controller)
            value = CPU_WEIGHT[limit_file] if value is None else value
            try:
                folder.mkdir(exist_ok=True)
                (folder / limit_file).write_text(str(value))
            except OSError as exc:
                _warn(controller, f"cannot make a {controller} cgroup under {parent}: {exc}")
                continue
            if controller == "memory":
                _no_swap(folder)
            folders[controller] = folder
        if "pids" not in folders:  # the watchdog lists a jail's processes from it
            _remove(folders.values())
            return None
        return cls(name, folders)

    def argv(self, argv: list[str]) -> list[str]:
        """`argv` started inside the groups (so is everything it starts)."""
        join = 'for g in $0; do echo $$ > "$g" || exit 125; done; exec "$@"'
        return ["/bin/sh", "-c", join, " ".join(map(str, self.procs)), *argv]

    def memory_limit(self) -> int | None:
        """The memory limit the kernel holds this jail to (None: no memory group)."""
        folder = self.folders.get("memory")
        for limit_file in ("memory.limit_in_bytes", "memory.max"):
            with contextlib.suppress(OSError, ValueError):
                return int((folder / limit_file).read_text()) if folder else None
        return None

    def remove(self) -> None:
        """Once the jail is gone. Its last processes may not be reaped yet: then a group
        is removed by the next `create` instead of waiting for them here."""
        _remove(self.folders.values())


_leftover: list[Path] = []
"""Groups of this process's closed jails whose processes were still exiting."""


def _remove(folders) -> None:
    for folder in dict.fromkeys(folders):
        try:
            folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            _leftover.append(folder)


def _no_swap(folder: Path) -> None:
    for name in _NO_SWAP:
        if (folder / name).exists():
            with contextlib.suppress(OSError):
                value = MAX_MEMORY_BYTES if name.startswith("memory.memsw") else 0
                (folder / name).write_text(str(value))


def _sweep(parent: Path) -> None:
    """Remove what earlier jails left: this process's closed groups, and the (empty) groups
    of jails whose framework process died without closing them."""
    for folder in list(_leftover):
        with contextlib.suppress(OSError):
            folder.rmdir()
            _leftover.remove(folder)
    for folder in parent.glob("jail-*-*"):
        jail, _, space = folder.name.partition("@")
        if space not in ("", process_space()):  # another pid namespace's, sharing the cgroupfs
            continue
        if _owner_gone(jail.split("-")[1]):
            _end(folder)


def _owner_gone(owner: str) -> bool:
    """Whether the framework process a group names (`<pid>.<start time>`, or a pid alone as
    groups were named before round 21) is gone. Its pid alone could name a later process
    the kernel gave it to, which left a jail stranded by its owner's death alive as long as
    that stranger lived."""
    pid, _, started = owner.partition(".")
    if not pid.isdigit():
        return False  # not a group of ours to judge
    if started:
        return start_time(int(pid)) != started
    return not Path(f"/proc/{pid}").exists()


def _end(folder: Path) -> None:
    """The group of a dead framework process's jail: removed, once what is left in it is
    killed. A jail whose bubblewrap died (the framework killed) while its sandbox was still
    being built leaves the sandbox's first process waiting forever for that parent, before it
    could ask to die with it; nothing else ends it. Mostly still exiting here: removed by a
    later sweep."""
    with contextlib.suppress(OSError):
        folder.rmdir()
        return
    with contextlib.suppress(OSError):
        if (folder / "cgroup.kill").exists():  # cgroup v2: the kernel kills them all at once
            (folder / "cgroup.kill").write_text("1")
        else:
            for pid in _read(folder / "cgroup.procs").split():
                _kill_member(int(pid), folder)
    with contextlib.suppress(OSError):
        folder.rmdir()


def _kill_member(pid: int, folder: Path) -> None:
    """SIGKILL to process `pid` if it is still in the group `folder`: read, then killed, a
    process that ended between the two could have given its pid to any other (red-team
    round 21). Pinned by a pidfd first, so the process checked is the process killed."""
    try:
        pinned = os.pidfd_open(pid)
    except OSError:  # gone (or no pidfds: a kernel before 5.3, where nothing is killed)
        return
    try:
        if f"/{folder.parent.name}/{folder.name}\n" in _read(Path(f"/proc/{pid}/cgroup")):
            signal.pidfd_send_signal(pinned, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        os.close(pinned)


def _parents() -> dict[str, tuple[Path, str]]:
    """Per controller, the folder our jails' groups go in (made here) and its limit files:
    cgroup v1's own hierarchy for each controller where it is mounted, else cgroup v2."""
    parents: dict[str, tuple[Path, str]] = {}
    v2 = _ROOT / "cgroup.controllers"
    for controller in _LIMIT_FILES:
        v1 = _ROOT / controller
        if (v1 / "cgroup.procs").exists():
            parent, limit_file, enable = v1 / "flashrsi", _LIMIT_FILES[controller][0], False
        elif v2.exists() and controller in _read(v2).split():
            parent, limit_file, enable = _ROOT / "flashrsi", _LIMIT_FILES[controller][1], True
        else:
            continue
        try:
            parent.mkdir(exist_ok=True)
            if enable:  # cgroup v2: the controller must be handed down to our groups
                for folder in (_ROOT, parent):
                    (folder / "cgroup.subtree_control").write_text(f"+{controller}")
        except OSError as exc:
            _warn(controller, f"cannot use the {controller} cgroup at {parent.parent}: {exc}")
            continue
        parents[controller] = (parent, limit_file)
    return parents


def _read(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text()
    return ""


def _warn(controller: str, message: str) -> None:
    if controller not in _warned:
        _warned.add(controller)
        what = {"pids": "a process limit", "memory": "a memory limit", "cpu": "a CPU share"}
        logger.warning("%s: jails run without %s", message, what[controller])
