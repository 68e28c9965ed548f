"""A pids cgroup per jail: a fork bomb in one run stops at `MAX_PIDS` processes instead of
taking every pid on the machine (`RLIMIT_NPROC` cannot do it: it counts per user, and every
jail runs as the same one).

The jail's own processes are started inside the group; a process that joins the jail moves
itself in (writing `0` to the group's `cgroup.procs` through a descriptor opened before it
left the host's mount namespace) before it runs anything of the agent's. cgroup v1's `pids`
hierarchy and cgroup v2 are both supported; where neither can be written (a container that
delegates none), jails run without the limit and the framework says so once in its log.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

MAX_PIDS = 512
_V1 = Path("/sys/fs/cgroup/pids")
_V2 = Path("/sys/fs/cgroup")

logger = logging.getLogger("flashrsi.environments")
_warned = False


class PidsGroup:
    """One jail's group; `procs` is the file a process writes its pid (or `0`) to to join."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs = folder / "cgroup.procs"

    @classmethod
    def create(cls, name: str) -> PidsGroup | None:
        parent = _parent()
        if parent is None:
            return None
        _sweep(parent)
        folder = parent / name
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(str(MAX_PIDS))
        except OSError as exc:
            _warn(f"cannot make a pids cgroup under {parent}: {exc}")
            return None
        return cls(folder)

    def remove(self) -> None:
        """Once the jail is gone. Its last processes may not be reaped yet: then the group
        is removed by the next `create` instead of waiting for them here."""
        try:
            self.folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            _leftover.append(self.folder)


_leftover: list[Path] = []
"""Groups of this process's closed jails whose processes were still exiting."""


def _sweep(parent: Path) -> None:
    """Remove what earlier jails left: this process's closed groups, and the (empty) groups
    of jails whose framework process died without closing them."""
    for folder in list(_leftover):
        with contextlib.suppress(OSError):
            folder.rmdir()
            _leftover.remove(folder)
    for folder in parent.glob("jail-*-*"):
        pid = int(folder.name.split("-")[1])
        if not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                folder.rmdir()


def _parent() -> Path | None:
    for root, enable in ((_V1, False), (_V2, True)):
        if not (root / "cgroup.procs").exists() or not _has_pids(root):
            continue
        parent = root / "flashrsi"
        try:
            parent.mkdir(exist_ok=True)
            if enable:  # cgroup v2: the controller must be handed down to our groups
                for folder in (root, parent):
                    (folder / "cgroup.subtree_control").write_text("+pids")
            return parent
        except OSError as exc:
            _warn(f"cannot use the pids cgroup at {root}: {exc}")
    return None


def _has_pids(root: Path) -> bool:
    if root == _V1:
        return True
    with contextlib.suppress(OSError):
        return "pids" in (root / "cgroup.controllers").read_text().split()
    return False


def _warn(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        logger.warning("%s: jails run without a process limit", message)
