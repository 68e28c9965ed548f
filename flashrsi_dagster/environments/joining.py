"""Joining a jail from a forked process: standard library only, because MiniAgent's fork
server (which imports nothing of the framework) loads this file by path.

`enter(pid)` moves the calling process into the namespaces of the jail whose first process is
`pid`; the PID namespace applies to the caller's children, so the caller forks once more and
the child calls `drop_privileges(env)` before running anything of the agent's.
"""

from __future__ import annotations

import ctypes
import os
import resource

JAIL_UID = 65534
"""`nobody`: the user agent processes run as inside a jail (no capabilities, owns nothing)."""
NAMESPACES = ("ipc", "uts", "net", "pid", "mnt")  # mnt last: it changes what /proc shows
_PR_SET_NO_NEW_PRIVS = 38
MAX_FILE_BYTES = 1 << 30


def enter(pid: int) -> None:
    """Join the jail's namespaces: only in a freshly forked, single-threaded process."""
    fds = [os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY) for name in NAMESPACES]
    try:
        for fd in fds:
            os.setns(fd)
    finally:
        for fd in fds:
            os.close(fd)


def drop_privileges(env: dict[str, str], group_fd: int | None = None) -> None:
    """Become the jail user for good, with no capabilities and no way to regain any
    (`no_new_privs` disarms setuid binaries and file capabilities), with exactly `env`.
    `group_fd`: the jail's pids cgroup (`cgroup.procs`, opened before entering), joined
    first, while this process is still root and has not forked."""
    if group_fd is not None:
        os.write(group_fd, b"0")
        os.close(group_fd)
    # No file the run writes (its stderr on the host included) grows past this.
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    os.setgroups([])
    os.setresgid(JAIL_UID, JAIL_UID, JAIL_UID)
    os.setresuid(JAIL_UID, JAIL_UID, JAIL_UID)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    os.umask(0o022)
    os.environ.clear()
    os.environ.update(env)
