"""Joining a jail from a forked process: standard library only, because MiniAgent's fork
server (which imports nothing of the framework) loads this file by path.

`enter(pid)` moves the calling process into the namespaces of the jail whose first process is
`pid`; the PID namespace applies to the caller's children, so the caller forks once more and
the child calls `drop_privileges(env, seccomp_filter)` before running anything of the agent's.
The filter (`seccomp.py`) is prepared before `enter`, on the host's side of the mounts.

Run as a program (`python -I -S joining.py PID CGROUP_PROCS CWD NAME=VALUE... -- ARGV`) it does
all of that for a program of its own (a CLI, the Codex core) and executes it: `Jail.enter_argv`
(nsenter and setpriv, used before, cannot load a seccomp filter).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib.util
import os
import resource
import signal
import sys
import termios
from collections.abc import Sequence

JAIL_UID = 65534
"""`nobody`: the user agent processes run as inside a jail (no capabilities, owns nothing)."""
NAMESPACES = ("ipc", "uts", "net", "pid", "mnt")  # mnt last: it changes what /proc shows
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_SET_PDEATHSIG = 1
_CAP_LAST = 63  # a drop of a capability the kernel does not have is a harmless EINVAL
MAX_FILE_BYTES = 1 << 30
MAX_OPEN_FILES = 1024
"""Open files per jail process (hard limit). The kernel counts open files per process and per
machine (`fs.file-max`), never per cgroup: inheriting the framework's limit (20,000 here, a
million on many hosts), a jail's 512 processes could hold the whole table, and every
unprivileged process of the machine, a sibling candidate's included, would get ENFILE."""
RELAYED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
           signal.SIGUSR2)  # fmt: skip
"""The signals a joined program's launcher passes on to the program's process group."""


def enter(pid: int) -> None:
    """Join the jail's namespaces: only in a freshly forked, single-threaded process."""
    fds = [os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY) for name in NAMESPACES]
    try:
        for fd in fds:
            os.setns(fd)
    finally:
        for fd in fds:
            os.close(fd)


def seccomp():
    """`seccomp.py`, loaded by path beside this file (see the module's docstring)."""
    module = sys.modules.get("flashrsi_seccomp")
    if module is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seccomp.py")
        spec = importlib.util.spec_from_file_location("flashrsi_seccomp", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["flashrsi_seccomp"] = module
    return module


def drop_privileges(
    env: dict[str, str], seccomp_filter: int, group_fds: Sequence[int] = ()
) -> None:
    """Become the jail user for good, with no capabilities and no way to regain any
    (`no_new_privs` disarms setuid binaries and file capabilities), with exactly `env`, under
    the seccomp filter `seccomp_filter` (`seccomp().prepare()`, made before `enter`).
    `group_fds`: the jail's cgroups (`cgroup.procs` of each, opened before entering), joined
    first, while this process is still root and has not forked."""
    for fd in group_fds:
        os.write(fd, b"0")
        os.close(fd)
    # No file the run writes (its stderr on the host included) grows past this.
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_NOFILE, _at_most(resource.RLIMIT_NOFILE, MAX_OPEN_FILES))
    os.setgroups([])
    os.setresgid(JAIL_UID, JAIL_UID, JAIL_UID)
    os.setresuid(JAIL_UID, JAIL_UID, JAIL_UID)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    for cap in range(_CAP_LAST + 1):  # the bounding set too, as setpriv did
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    seccomp().load(seccomp_filter)
    os.umask(0o022)
    os.environ.clear()
    os.environ.update(env)


def _at_most(limit: int, bound: int) -> tuple[int, int]:
    """`limit`'s soft and hard values lowered to `bound` (never raised: a host may set less)."""
    soft, hard = resource.getrlimit(limit)
    hard = bound if hard == resource.RLIM_INFINITY else min(hard, bound)
    return (hard if soft == resource.RLIM_INFINITY else min(soft, hard)), hard


def main(argv: list[str]) -> int:
    """`PID CGROUP_PROCS|- CWD [NAME=VALUE...] -- PROGRAM...`: run PROGRAM in the jail of PID
    as the jail user, under the filter, in CWD, with exactly the NAME=VALUE environment. This
    process stays on the host's side, waits, and exits with the program's code."""
    pid, group, cwd, *rest = argv
    if "--" not in rest or rest[-1] == "--":
        raise SystemExit("usage: joining.py PID CGROUP_PROCS|- CWD [NAME=VALUE...] -- PROGRAM...")
    split = rest.index("--")
    env = dict(item.split("=", 1) for item in rest[:split])
    program = rest[split + 1 :]
    group_fds = [os.open(path, os.O_WRONLY) for path in group.split(":")] if group != "-" else []
    seccomp_filter = seccomp().prepare()
    enter(int(pid))
    signal.pthread_sigmask(signal.SIG_BLOCK, RELAYED)  # until the relay is in place
    child = os.fork()
    if child:
        for fd in group_fds:
            os.close(fd)
        _relay_to(child)
        return _exit_like(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
    os.setpgid(0, 0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, RELAYED)  # an executed program keeps its mask
    _leave_the_terminal()
    drop_privileges({**env, "PWD": cwd}, seccomp_filter, group_fds)
    # Killed with the launcher (an adapter's SIGKILL to its group no longer reaches it); set
    # here: a change of user clears it.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.chdir(cwd)
    try:
        os.execvpe(program[0], program, env={**env, "PWD": cwd})
    except OSError as exc:
        print(f"joining.py: cannot run {program[0]}: {exc}", file=sys.stderr)
        return 127


def _relay_to(child: int) -> None:
    """The program runs in a process group of its own (holding only its jail's processes):
    in its caller's, a `kill(0, …)` of one of its commands reached every process of that
    group it may signal, whatever their PID namespace — the programs of the caller's other
    jails, all the jail user's (red-team round 21). The signals an adapter sends the
    launcher, or the launcher's group (Codex's SIGTERM to cancel), are passed on to it."""

    def relay(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child, signum)

    with contextlib.suppress(OSError):  # before the child's own `setpgid`, or after it ran
        os.setpgid(child, child)
    for signum in RELAYED:
        signal.signal(signum, relay)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, RELAYED)


def _leave_the_terminal() -> None:
    """No controlling terminal, and no terminal among its standard streams: a CLI joined from
    a terminal (Claude Code's SDK starts it in the caller's session, its stderr the caller's)
    read what the user typed there through `/dev/tty` or fd 2, and switched off its echo
    (red-team round 19). The terminal is given up (`TIOCNOTTY`, for this process and what it
    starts) rather than the session left: a new session is a new process group too, which the
    signals an adapter sends the launcher's group (Codex's SIGTERM to cancel) would not reach.
    A stream that is a terminal reads and writes nothing instead, as a MiniAgent run's
    (`_entry._child`)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if os.isatty(fd):
            os.dup2(null, fd)
    os.close(null)
    try:
        terminal = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:  # no controlling terminal: nothing to give up
        return
    try:
        fcntl.ioctl(terminal, termios.TIOCNOTTY)
    finally:
        os.close(terminal)


def _exit_like(code: int) -> int:
    """The program's exit code; a program killed by a signal kills us with it (as nsenter
    does), so the caller sees the same death."""
    if code < 0:
        if -code != signal.SIGKILL:  # its handler cannot be set, nor needs to be
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
