"""The host folders behind one local environment, and the skeleton of its root.

The root is an ordinary host folder: every path in it is writable by the trial except the
host folders it shares read-only (by default `/usr` and `/etc`, with `/bin`, `/sbin`, `/lib`
and `/lib64` mirrored as the same symlinks or shared read-only too), which appear only inside
the sandbox's own mount namespaces, never on the host.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from flashrsi_dagster.environments.local_chroot.sandbox import Bind

DEFAULT_HOST_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEVICE_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}
# Writable folders every container has, with their usual modes.
WRITABLE = {
    "tmp": 0o1777,
    "var/tmp": 0o1777,
    "dev/shm": 0o1777,
    "root": 0o700,
    "home": 0o755,
    "run": 0o755,
    "logs/agent": 0o777,
    "logs/verifier": 0o777,
    "logs/artifacts": 0o777,
    "tests": 0o755,
    "solution": 0o755,
}

# Top-level folders that always belong to the root itself, never shared from the host.
OWN = frozenset({"proc", "dev", "logs", *(path.split("/")[0] for path in WRITABLE)})


@dataclass(frozen=True)
class EnvDirs:
    """The host folders of one local environment::

    <work>/
    ├── rootfs/              the trial's `/`
    ├── rounds/<n>/
    │   ├── verifier/        `/logs/verifier` during verification round n
    │   └── tests/           `/tests` during verification round n
    ├── io/                  command output (anonymous, already-unlinked files)
    └── holder.log           the holder's stderr, quoted when it fails to start
    """

    work: Path

    @property
    def rootfs(self) -> Path:
        return self.work / "rootfs"

    @property
    def io(self) -> Path:
        return self.work / "io"

    @property
    def holder_log(self) -> Path:
        return self.work / "holder.log"

    def round(self, number: int) -> Path:
        return self.work / "rounds" / str(number)


def make_rootfs(dirs: EnvDirs, host_dirs: tuple[str, ...]) -> list[Bind]:
    """Create the root's skeleton; return the binds every sandbox of this root mounts."""
    root = dirs.rootfs
    root.mkdir(parents=True)
    dirs.io.mkdir()
    binds: list[Bind] = []
    for host_dir in host_dirs:
        source = Path(host_dir)
        target = root / host_dir.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():  # merged-/usr hosts: /bin -> usr/bin, kept as is
            target.symlink_to(os.readlink(source))
        elif source.is_dir():
            target.mkdir()
            binds.append(Bind(source, host_dir))
    for relative, mode in WRITABLE.items():
        (root / relative).mkdir(parents=True, exist_ok=True)
        (root / relative).chmod(mode)
    (root / "proc").mkdir()
    for device in DEVICES:
        (root / "dev" / device).touch()
        binds.append(Bind(Path("/dev", device), f"/dev/{device}", read_only=False))
    for name, target in DEVICE_LINKS.items():
        (root / "dev" / name).symlink_to(target)
    return binds


def is_read_only(path: str, host_dirs: tuple[str, ...]) -> str | None:
    """The shared host folder that `path` (absolute, inside the root) falls in, if any."""
    pure = PurePosixPath(path)
    return next((d for d in host_dirs if pure.is_relative_to(d)), None)


def remove_work(dirs: EnvDirs) -> None:
    """Delete the environment's folders. Mounts only ever exist inside the sandbox's own
    namespaces, but refuse anyway if one is visible here: deleting through a bind mount
    would delete host files."""
    for current, subdirs, _ in os.walk(dirs.rootfs):
        for name in subdirs:
            if os.path.ismount(os.path.join(current, name)):
                raise RuntimeError(f"refusing to delete {dirs.work}: {current}/{name} is mounted")
    shutil.rmtree(dirs.work)
