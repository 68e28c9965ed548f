"""The seccomp filter on every agent process in a jail: the system calls an agent never needs
and an attacker would, refused by the kernel.

Refused (EPERM): making or joining namespaces (`unshare`, `clone` with a `CLONE_NEW*` flag,
`setns`), reading or steering other processes (`ptrace`, `process_vm_readv`/`writev`,
`pidfd_getfd`, `kcmp`), kernel keyrings, `bpf`, `perf_event_open`, every mount call (old and
new API), `chroot`, kernel modules and `kexec`, `userfaultfd`, `io_uring`, the clock, swap,
quota (`quotactl`, `quotactl_fd`), reboot, `acct`, `syslog`, `open_by_handle_at`, `modify_ldt`
and the like, `clone` with `CLONE_PARENT` (a command's child would pass for a new command of
the agent's), vsock sockets (EAFNOSUPPORT: no network namespace holds them), and the
`ioctl`s that type into a terminal (`TIOCSTI`, `TIOCLINUX`: a second guard; a CLI joined to a
jail gives up its controlling terminal and has none among its streams, `joining.py`), and
`prctl(PR_SET_CHILD_SUBREAPER)` (the shell watchdog reads a command's lineage from its
parent). `clone3` answers ENOSYS: its flags sit in memory the filter cannot read, and libc
then falls back to `clone`, whose flags it can (what Docker and Flatpak do). Threads and plain
forks stay allowed. Only the native ABI passes: a 32-bit or x32 system call kills the process.

Built with libseccomp (Debian's `libseccomp2`) through ctypes, standard library only, because
MiniAgent's fork server loads `joining.py` (and with it this file) by path. A bubblewrap
sandbox gets it as `--seccomp FD` (`export`); a process that joins a jail loads it itself
(`prepare` while still on the host's side, `load` once it is the jail user), because a
bubblewrap filter covers only bubblewrap's own child.
"""

from __future__ import annotations

import ctypes
import errno
import os

LIBRARY = "libseccomp.so.2"
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_MASKED_EQ = 7  # SCMP_CMP_MASKED_EQ: (arg & datum_a) == datum_b
_TSYNC = 4  # SCMP_FLTATR_CTL_TSYNC: every thread of the process gets the filter

DENIED = (
    "setns", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "iopl", "ioperm",
    "modify_ldt",
)  # fmt: skip
"""Refused outright with EPERM."""
DENIED_IF_KNOWN = ("quotactl_fd",)
"""Refused with EPERM where this libseccomp knows them (`quotactl_fd`, the descriptor-based
twin of `quotactl`, since 2.5.2); an older one answers them ENOSYS, their numbers being past
the last it knows (`_unknown_numbers`)."""
NEW_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
"""`clone` and `unshare` with any of these (their first argument) are refused with EPERM."""
CLONE_PARENT = 0x00008000
"""`clone` with this flag is refused with EPERM: the child would be its caller's parent's, so a
command's child would be a child of the agent's main process, which the shell watchdog
(`watchdog.py`) takes for a fresh command with a fresh clock: a chain of such siblings, each
living under the limit, would run past the shell timeout for good."""
DENIED_IOCTLS = (
    0x5412,  # TIOCSTI: types into a terminal, the host's one when the jail shares its session
    0x541C,  # TIOCLINUX: the same through the virtual console
)
"""`ioctl` requests refused with EPERM (compared on the low 32 bits the kernel reads, so high
bits set in the argument do not slip past: CVE-2019-10063)."""
NUMBERS = 512
"""System call numbers the filter answers for (x86-64 and arm64 use fewer; x32's start here).
Those past the last one libseccomp knows answer ENOSYS, as on an older kernel: the filter is a
list of refusals, and a call newer than the list (a mount call, say) must not pass unseen."""
DENIED_SOCKETS = (40,)  # AF_VSOCK
"""Socket families refused (EAFNOSUPPORT, as where the family is not built in): a vsock is not
in any network namespace, so from a jail without a network it still reaches the hypervisor
(CID 2) and the host's own vsock services, past the gateway."""
PR_SET_CHILD_SUBREAPER = 36
"""`prctl` option refused with EPERM: a subreaper adopts its descendants' orphans, which would
hand a chain of short-lived background processes to the agent's main process, where the host's
watchdog (`watchdog.py`) takes each for a fresh command and restarts its clock."""


class SeccompUnavailable(RuntimeError):
    """libseccomp cannot be loaded or refuses the filter: jails are not run without it."""


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


_lib: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """libseccomp, loaded once (before a process enters a jail, whose mounts may lack it)."""
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL(LIBRARY, use_errno=True)
        except OSError as exc:
            raise SeccompUnavailable(
                f"agent confinement filters system calls with libseccomp, which cannot be "
                f"loaded ({exc}): `apt-get install libseccomp2`, or set "
                "`experiment.confinement: none` to run agents unconfined (the experiment is "
                "then marked unconfined in every summary)"
            ) from None
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        for name in ("seccomp_load", "seccomp_release"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_syscall_resolve_num_arch.argtypes = [ctypes.c_uint32, ctypes.c_int]
        lib.seccomp_syscall_resolve_num_arch.restype = ctypes.c_void_p  # a name we never free
        lib.seccomp_rule_add_array.argtypes = [
            ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
            ctypes.POINTER(_ArgCmp),
        ]  # fmt: skip
        _lib = lib
    return _lib


def prepare() -> int:
    """A filter context holding every rule (a handle for `load` or `export`)."""
    lib = library()
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        _check(lib.seccomp_attr_set(ctx, _TSYNC, 1), "seccomp_attr_set(TSYNC)")
        for name in DENIED:
            _rule(lib, ctx, _ERRNO | errno.EPERM, name)
        for name in DENIED_IF_KNOWN:
            if lib.seccomp_syscall_resolve_name(name.encode()) >= 0:
                _rule(lib, ctx, _ERRNO | errno.EPERM, name)
        _rule(lib, ctx, _ERRNO | errno.ENOSYS, "clone3")
        for flag in NEW_NAMESPACE_FLAGS:
            for name in ("clone", "unshare"):
                _rule(lib, ctx, _ERRNO | errno.EPERM, name, _ArgCmp(0, _MASKED_EQ, flag, flag))
        parent = _ArgCmp(0, _MASKED_EQ, CLONE_PARENT, CLONE_PARENT)
        _rule(lib, ctx, _ERRNO | errno.EPERM, "clone", parent)
        for number in _unknown_numbers(lib):
            _check(
                lib.seccomp_rule_add_array(ctx, _ERRNO | errno.ENOSYS, number, 0, None),
                f"rule for system call {number}",
            )
        for family in DENIED_SOCKETS:
            domain = _ArgCmp(0, _MASKED_EQ, 0xFFFFFFFF, family)
            _rule(lib, ctx, _ERRNO | errno.EAFNOSUPPORT, "socket", domain)
        subreaper = _ArgCmp(0, _MASKED_EQ, 0xFFFFFFFF, PR_SET_CHILD_SUBREAPER)
        _rule(lib, ctx, _ERRNO | errno.EPERM, "prctl", subreaper)
        for request in DENIED_IOCTLS:
            _rule(
                lib, ctx, _ERRNO | errno.EPERM, "ioctl", _ArgCmp(1, _MASKED_EQ, 0xFFFFFFFF, request)
            )
    except BaseException:
        lib.seccomp_release(ctx)
        raise
    return ctx


def load(ctx: int) -> None:
    """Install the filter on the calling process (after `no_new_privs`, or as root), for
    good: it is inherited by every child and survives `execve`."""
    lib = library()
    try:
        _check(lib.seccomp_load(ctx), "seccomp_load")
    finally:
        lib.seccomp_release(ctx)


def export(fd: int) -> None:
    """Write the filter as a BPF program to `fd` (bubblewrap's `--seccomp FD` reads it)."""
    lib = library()
    ctx = prepare()
    try:
        _check(lib.seccomp_export_bpf(ctx, fd), "seccomp_export_bpf")
    finally:
        lib.seccomp_release(ctx)


def _unknown_numbers(lib: ctypes.CDLL) -> list[int]:
    """System call numbers past the last one this libseccomp knows, up to `NUMBERS`: calls
    newer than the library (a kernel adds a few a year), which a rule by name cannot refuse."""
    known = [n for n in range(NUMBERS) if lib.seccomp_syscall_resolve_num_arch(0, n)]
    return list(range(max(known) + 1, NUMBERS)) if known else []


def _rule(lib: ctypes.CDLL, ctx: int, action: int, name: str, *compare: _ArgCmp) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number < 0:
        raise SeccompUnavailable(f"libseccomp does not know the system call {name!r}")
    array = (_ArgCmp * len(compare))(*compare) if compare else None
    _check(lib.seccomp_rule_add_array(ctx, action, number, len(compare), array), f"rule {name}")


def _check(result: int, what: str) -> None:
    if result != 0:
        raise SeccompUnavailable(f"libseccomp: {what} failed: {os.strerror(-result)}")
