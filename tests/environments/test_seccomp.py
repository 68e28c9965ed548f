"""The seccomp filter, attacked from inside a real jail: a process that joined it (as every
agent's does) cannot make namespaces, trace, mount, or reach keyrings, and still runs Python,
threads, subprocesses, git and node."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.environments import seccomp
from flashrsi_dagster.environments.jail import Jail, JailError, require_jails
from tests.conftest import needs_jails
from tests.environments.test_jail import ENV, python, sh

pytestmark = needs_jails


def test_every_process_of_the_jail_is_filtered(jail: Jail, work: Path):
    result = sh(
        jail, "grep '^Seccomp:' /proc/self/status; sh -c 'grep ^Seccomp: /proc/$$/status'", work
    )
    shim = Path(f"/proc/{jail.pid}/status").read_text()

    assert result.stdout.split() == ["Seccomp:", "2", "Seccomp:", "2"]
    assert "Seccomp:\t2" in shim  # bubblewrap's own processes too


def test_no_new_user_namespace_gives_root(jail: Jail, work: Path):
    result = sh(jail, "unshare -r id -u; echo rc=$?; unshare -rn true; echo rc=$?", work)

    assert "rc=0" not in result.stdout, result.stdout
    assert "Operation not permitted" in result.stderr
    assert not result.stdout.startswith("0")


def test_a_mount_in_a_new_namespace_is_refused(jail: Jail, work: Path):
    result = sh(jail, "unshare -rm sh -c 'mount -t tmpfs none /tmp && echo MOUNTED'", work)

    assert "MOUNTED" not in result.stdout
    assert result.returncode != 0


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_strace_cannot_trace(jail: Jail, work: Path):
    result = sh(jail, "strace -o /dev/null true; echo rc=$?", work)

    assert "rc=0" not in result.stdout
    assert "Operation not permitted" in result.stderr


RAW_CALLS = """
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
def call(name, number, *args):
    result = libc.syscall(number, *args)
    print(name, 0 if result >= 0 else ctypes.get_errno())
call("ptrace", 101, 0, 0, 0, 0)                     # PTRACE_TRACEME
call("keyctl", 250, 0, ctypes.c_long(-3), 1)         # session keyring id, created if missing
call("add_key", 248, b"user", b"k", b"v", 1, ctypes.c_long(-3))
buf = ctypes.create_string_buffer(8)
iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)
call("process_vm_readv", 310, os.getpid(), iov, 1, iov, 1, 0)
call("userfaultfd", 323, 1)                          # UFFD_USER_MODE_ONLY
call("perf_event_open", 298, 0, 0, -1, -1, 0)
call("bpf", 321, 0, 0, 0)
call("unshare", 272, 0x10000000)                     # CLONE_NEWUSER
call("setns", 308, os.open("/proc/self/ns/net", os.O_RDONLY), 0)
call("clone3", 435, 0, 0)
call("fsopen", 430, b"tmpfs", 0)
call("prctl_subreaper", 157, 36, 1)               # PR_SET_CHILD_SUBREAPER
call("listmount", 458, 0, 0, 0, 0)                 # newer than libseccomp: unknown by name
call("open_tree_attr", 467, -100, b"/", 0, 0, 0)
call("modify_ldt", 154, 0, ctypes.create_string_buffer(16), 16)
call("clone_parent", 56, 0x8000 | 17, 0, 0, 0, 0)  # CLONE_PARENT: a sibling, not a child
call("socket_vsock", 41, 40, 1, 0)                 # AF_VSOCK: past the network namespace
call("socket_vsock_high_bits", 41, ctypes.c_long(40 | 1 << 32), 1, 0)
t = threading.Thread(target=lambda: print("thread", 0)); t.start(); t.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) - 7)
"""


def test_dangerous_system_calls_are_refused_and_threads_and_forks_still_work(
    jail: Jail, work: Path
):
    result = python(jail, RAW_CALLS, work)

    assert result.returncode == 0, result.stderr
    answers = dict(line.split() for line in result.stdout.splitlines())
    expected = {name: str(errno.EPERM) for name in answers} | {
        "clone3": str(errno.ENOSYS),  # libc falls back to clone, whose flags are checked
        "listmount": str(errno.ENOSYS),  # as on a kernel without it: a program falls back
        "open_tree_attr": str(errno.ENOSYS),
        "socket_vsock": str(errno.EAFNOSUPPORT),
        "socket_vsock_high_bits": str(errno.EAFNOSUPPORT),
        "thread": "0",
        "fork": "0",
    }
    assert answers == expected


def test_the_tools_an_agent_needs_still_work(jail: Jail, work: Path):
    script = (
        "python3 --version >/dev/null 2>&1 || true; "
        "git init -q repo && cd repo && git -c user.name=a -c user.email=a@b commit -q "
        "--allow-empty -m x && git log --oneline | wc -l; cd ..; "
        "(sleep 0.1 & wait) && echo subprocess ok; "
        + ("node -e 'require(\"child_process\").execSync(\"true\"); console.log(\"node ok\")'"
           if shutil.which("node") else "echo node ok")
    )  # fmt: skip
    result = sh(jail, script, work, timeout=60)

    assert result.stdout.split("\n")[:3] == ["1", "subprocess ok", "node ok"], result.stderr


def test_without_libseccomp_there_is_no_jail(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(seccomp, "LIBRARY", "libseccomp-missing.so.0")
    monkeypatch.setattr(seccomp, "_lib", None)

    with pytest.raises(JailError, match=r"libseccomp.*apt-get install libseccomp2"):
        require_jails()


TYPE_INTO_TERMINAL = """
import ctypes, os, termios
libc = ctypes.CDLL(None, use_errno=True)
try:
    fd = os.open("/dev/tty", os.O_RDWR)
except OSError:  # no controlling terminal (given up): the filter on a pty of its own
    fd = os.openpty()[1]
for request in (termios.TIOCSTI, termios.TIOCSTI | 1 << 32):  # high bits: CVE-2019-10063
    result = libc.syscall(16, fd, ctypes.c_ulong(request), ctypes.c_char_p(b"INJECTED"))
    print("TIOCSTI", result, ctypes.get_errno())
"""


@pytest.mark.skipif(shutil.which("setsid") is None, reason="util-linux setsid is not installed")
def test_a_process_joined_to_the_jail_cannot_type_into_the_hosts_terminal(jail: Jail, work: Path):
    """A CLI joined from a terminal gives up its controlling terminal (no `/dev/tty`) and has
    none among its streams (`tests/sabotage/test_round19_recovery.py`); `TIOCSTI` is refused
    by the filter besides, on any terminal."""
    (work / "type.py").write_text(TYPE_INTO_TERMINAL)
    argv = jail.enter_argv([f"{sys.base_prefix}/bin/python3", "-I", "type.py"], ENV, work)
    terminal, side = os.openpty()
    typed = b""
    try:  # `setsid -c`: a new session whose controlling terminal is `side`, as a login's
        result = subprocess.run(
            ["setsid", "-c", *argv], stdin=side, capture_output=True, text=True, timeout=60
        )
        os.set_blocking(terminal, False)
        with contextlib.suppress(BlockingIOError, OSError):
            typed = os.read(terminal, 4096)
    finally:
        os.close(side)
        os.close(terminal)

    assert result.stdout.splitlines() == ["TIOCSTI -1 1"] * 2, result.stderr
    assert b"INJECTED" not in typed
