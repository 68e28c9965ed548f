"""Sabotage, twenty-first red-team pass (issue 22, items 2, 3, 4, 6, 7): limits held by the host
and the kernel, and recovery, aimed at the last stop's changes — the jailed CLI launcher
giving up its terminal with `TIOCNOTTY` (it stays in its caller's process group) instead of
leaving the session, and the sweep that kills what a dead framework process's jail left — and
at ground not probed before: processes that leave the launcher's group or re-acquire a
terminal, the sweep judging another process's live jail, a jail filling its `/tmp` or the
machine's tables, and two drivers of one experiment at once.

Each attack is one test; one that got through on main was written here first, failing, then
closed by the smallest fix (see each docstring).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashrsi_dagster.environments.jail import Jail
from flashrsi_dagster.environments.joining import JAIL_UID
from flashrsi_dagster.environments.runtime import python_runtime
from tests.conftest import PATIENCE, needs_jails, wait_until
from tests.environments.test_jail import ENV

PYTHON = f"{sys.base_prefix}/bin/python3"

# -- the launcher's process group ------------------------------------------------------------

WATCHES_SIGTERM = """
import os, signal, sys
signal.signal(signal.SIGTERM, lambda *_: os.write(1, b"TERM\\n"))  # print may be writing
print("READY", flush=True)
sys.stdin.read()  # until the test closes it: a signal sent before is handled before this ends
print("END", flush=True)
"""
SIGNALS_ITS_GROUP = """
import os, signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.kill(0, signal.SIGTERM)
print("SENT", flush=True)
"""


def _watching(jail: Jail, **popen) -> subprocess.Popen[bytes]:
    """`WATCHES_SIGTERM` joined to `jail` as `Jail.enter_argv` starts a CLI, once it is ready."""
    argv = jail.enter_argv([PYTHON, "-I", "-c", WATCHES_SIGTERM], ENV, Path("/"))
    started = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, **popen
    )
    assert _printed(started, "READY\n") == "READY\n"
    return started


def _printed(started: subprocess.Popen[bytes], until: str) -> str:
    """What the program printed until `until` (or its end), waited for at most `PATIENCE`."""
    assert started.stdout is not None
    fd, out, deadline = started.stdout.fileno(), b"", time.monotonic() + PATIENCE
    while until.encode() not in out and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            if not (chunk := os.read(fd, 4096)):
                break
            out += chunk
    return out.decode()


def _said(started: subprocess.Popen[bytes]) -> str:
    """What a `WATCHES_SIGTERM` program printed, once its input is closed and it has ended."""
    out, _ = started.communicate(b"", timeout=PATIENCE)
    return out.decode()


@needs_jails
def test_a_joined_program_cannot_signal_another_jail_s_program_through_the_caller_s_group():
    """Attack: a command of a jailed Claude Code CLI (its SDK starts the launcher in the
    framework's process group, as `swe_bench` tests and STOP's improver are started) sends a
    signal to its process group, `kill(0, SIGTERM)` (or SIGSTOP, SIGKILL): the kernel delivers
    it to every process of the group it may signal, whatever their PID namespace — the jailed
    programs of every other run of the framework process, all `nobody`: a hostile candidate
    ends or freezes its sibling candidates' runs, charged to them. Got through on main (the
    other jail's program got the SIGTERM: since the last stop the launcher keeps the caller's
    group, giving up only its terminal). Stops it: `joining.py` puts the program in a process
    group of its own (holding only its jail's processes) and relays the signals the launcher
    gets to it, so an adapter's cancel still reaches it."""
    with Jail(python_runtime()) as one, Jail(python_runtime()) as other:
        victim = _watching(one)  # in this process's group, as the SDK starts the CLI
        try:
            argv = other.enter_argv([PYTHON, "-I", "-c", SIGNALS_ITS_GROUP], ENV, Path("/"))
            attacker = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
            assert "SENT" in attacker.stdout, attacker
        finally:
            said = _said(victim)

    assert said == "END\n", said


@needs_jails
def test_a_cancel_sent_to_the_launcher_s_group_still_reaches_the_program():
    """Not an attack: the Codex adapter's cancel, SIGTERM to the group of the launcher it
    started in a session of its own, reaches the jailed program (so the core ends its session
    and writes its last events). Held on main (the program was in that group); now relayed
    by the launcher to the program's own group."""
    with Jail(python_runtime()) as jail:
        started = _watching(jail, start_new_session=True)
        os.killpg(started.pid, signal.SIGTERM)
        heard = _printed(started, "TERM\n")
        said = _said(started)

    assert heard == "TERM\n" and said == "END\n", (heard, said)


@needs_jails
def test_a_sigkill_to_the_launcher_s_group_still_ends_the_program():
    """Not an attack: the Codex adapter's last resort, SIGKILL to the launcher's group once
    its grace has passed, ends the jailed program then, not at the jail's close. Held on main
    (the program was in that group); now the program dies with its launcher
    (`PR_SET_PDEATHSIG`, set after the change of user, which clears it)."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv(["/bin/sh", "-c", "echo READY; exec sleep 3600"], ENV, Path("/"))
        started = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert started.stdout is not None and started.stdout.readline() == "READY\n"
        assert _jail_users(jail), "the program is not in the jail's group"
        os.killpg(started.pid, signal.SIGKILL)
        started.wait()

        wait_until(lambda: not _jail_users(jail), "the program ended with its launcher")


def _jail_users(jail: Jail) -> list[int]:
    """The processes of `jail`'s group running as the jail user (the joined ones)."""
    assert jail.group is not None
    found = []
    for pid in jail.group.members.read_text().split():
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            if f"Uid:\t{JAIL_UID}\t" in status and "State:\tZ" not in status:
                found.append(int(pid))
    return found


# -- processes that leave the launcher's group -----------------------------------------------

ESCAPES = {
    "a daemon: a double fork and a new session": """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3600)
    os._exit(0)
""",
    "a process group of its own, deaf to SIGTERM and SIGHUP": """
import os, signal, time
if os.fork() == 0:
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    time.sleep(3600)
""",
    "a stopped process": """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(3600)
""",
}


@needs_jails
@pytest.mark.parametrize("escape", ESCAPES)
def test_a_process_that_left_the_launcher_s_group_ends_with_the_jail(escape):
    """Attack: a command leaves every group an adapter signals (a daemon's double fork and
    new session, a group of its own deaf to SIGTERM and SIGHUP, a stopped process) and its
    program exits, the launcher with it: a cancel or a timeout signals nothing it is in, and
    it works on after the run. Held on main: it runs on only while the jail lives; the
    jail's close (every run's end, cancelled or timed out) kills the sandbox's first process
    and the kernel every process of its PID namespace: none of them is alive after."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv([PYTHON, "-I", "-c", ESCAPES[escape]], ENV, Path("/"))
        # its output not waited for to its end: the escaped process holds it open
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert done.returncode == 0, done
        wait_until(lambda: _jail_users(jail), "the escaped process runs in the jail")
        left = {pid: _started(pid) for pid in _jail_users(jail)}

    wait_until(lambda: not any(_started(pid) == at for pid, at in left.items()), "all ended")


def _started(pid: int) -> str | None:
    """Process `pid`'s start time (None: no such process), telling it from a later one."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


# -- a terminal of the jail's own ------------------------------------------------------------

TAKES_A_TERMINAL = """
import ctypes, errno, fcntl, json, os, termios
found = {}
def tried(name, call):
    try:
        call()
        found[name] = "ALLOWED"
    except OSError as exc:
        found[name] = errno.errorcode.get(exc.errno, str(exc.errno))
if os.fork():  # the program leads its own group: a child may start a session
    os.wait()
    raise SystemExit
os.setsid()  # a session leader without a terminal, which may take one
master, slave = os.openpty()  # the jail's own /dev/ptmx
tried("TIOCSCTTY", lambda: fcntl.ioctl(slave, termios.TIOCSCTTY, 0))
tried("TIOCSTI on the terminal it controls", lambda: fcntl.ioctl(slave, termios.TIOCSTI, b"x"))
tried("TIOCSTI through /dev/tty", lambda: fcntl.ioctl(os.open("/dev/tty", os.O_RDWR),
      termios.TIOCSTI, b"x"))
tried("TIOCSTI through a duplicate", lambda: fcntl.ioctl(os.dup(slave), termios.TIOCSTI, b"x"))
tried("TIOCSTI on the master side", lambda: fcntl.ioctl(master, termios.TIOCSTI, b"x"))
libc = ctypes.CDLL(None, use_errno=True)
def high_bits():
    char = ctypes.c_char(b"x")
    if libc.ioctl(slave, ctypes.c_ulong(termios.TIOCSTI | 1 << 32), ctypes.byref(char)) < 0:
        raise OSError(ctypes.get_errno(), "ioctl")
tried("TIOCSTI with high bits set", high_bits)
tried("TIOCLINUX", lambda: fcntl.ioctl(slave, 0x541C, b"\\x0b"))
found["terminals"] = sorted(os.listdir("/dev/pts"))
print("FOUND", json.dumps(found))
"""
REFUSED_ON_A_TERMINAL = (
    "TIOCSTI on the terminal it controls",
    "TIOCSTI through /dev/tty",
    "TIOCSTI through a duplicate",
    "TIOCSTI on the master side",
    "TIOCSTI with high bits set",
    "TIOCLINUX",
)


@pytest.fixture(scope="module")
def own_terminal() -> dict:
    """`TAKES_A_TERMINAL` run once in a jail, joined as a CLI is, its streams no terminal."""
    with Jail(python_runtime()) as jail:
        argv = jail.enter_argv([PYTHON, "-I", "-c", TAKES_A_TERMINAL], ENV, Path("/"))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE)
    assert "FOUND " in done.stdout, done
    return json.loads(done.stdout.split("FOUND ", 1)[1])


@needs_jails
@pytest.mark.parametrize("attempt", REFUSED_ON_A_TERMINAL)
def test_a_terminal_the_jail_opens_types_nothing(own_terminal, attempt):
    """Attack: a command re-acquires a controlling terminal (a new session, the jail's own
    `/dev/ptmx`, `TIOCSCTTY`: allowed, a terminal of the jail's) and types into it with
    `TIOCSTI` (on it, through `/dev/tty`, a duplicate descriptor, the master side, the
    request with high bits set) or `TIOCLINUX`, looking for a way to the terminal
    `flashrsi run` was typed in. Held on main: each is refused by the filter (EPERM)."""
    assert own_terminal[attempt] == "EPERM", own_terminal


@needs_jails
def test_the_jail_shows_none_of_the_host_s_terminals(own_terminal):
    """Attack: the same command looks in `/dev/pts` for the host's terminals (the user's
    shell, another run's), to open one by its path. Held on main: the jail's `/dev` holds a
    devpts of its own, showing only the terminal it opened."""
    assert own_terminal["TIOCSCTTY"] == "ALLOWED", own_terminal
    assert set(own_terminal["terminals"]) <= {"ptmx", "0"}, own_terminal
