"""The host's shell timeout: in a real jail, a command the agent's main process started is
killed once it has run past the limit (a loop of short children included), and the main
process is not; with or without the jail's pids cgroup."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.environments.jail import Jail, Mount
from flashrsi_dagster.environments.joining import JAIL_UID
from flashrsi_dagster.environments.runtime import python_runtime
from flashrsi_dagster.environments.watchdog import ShellWatchdog
from tests.conftest import needs_jails
from tests.environments.test_jail import ENV

pytestmark = needs_jails

MAIN = "sleep 600; echo first $?; sh -c 'while :; do sleep 0.2; done'; echo second $?; echo main"
"""The agent's main process: two commands that never end by themselves, one after the other."""


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "proc-scan"])
def test_commands_past_the_limit_are_killed_and_the_main_process_is_not(tmp_path: Path, cgroup):
    work = tmp_path / "run"
    work.mkdir()
    os.chown(work, JAIL_UID, JAIL_UID)
    with Jail(python_runtime().with_mounts(Mount(work, writable=True))) as jail:
        group = jail.group
        if not cgroup:
            jail.group = None
        watchdog = ShellWatchdog(jail, limit=1)
        main = subprocess.run(
            jail.enter_argv(["/bin/sh", "-c", MAIN], ENV, work),
            capture_output=True,
            text=True,
            timeout=300,
        )
        kills = watchdog.close()
        jail.group = group

    assert main.stdout.split("\n")[:3] == ["first 137", "second 137", "main"], main.stderr
    commands = [k.command for k in kills]
    assert commands[0] == "sleep 600"
    assert any(c.startswith("sh -c while") for c in commands)
    assert all(k.seconds >= 1 for k in kills if k.command == "sleep 600")


FORK_CHAIN = """
import os, sys, time
began = time.monotonic()
while time.monotonic() - began < 60:  # a generation lives ~20 ms: far less than a look
    if os.fork():
        os._exit(0)  # the parent exits; its child, an orphan of the jail, goes on
    with open("progress", "w") as progress:
        progress.write(f"{time.monotonic() - began:.1f}")
    time.sleep(0.02)
open("progress", "w").write("ESCAPED")
"""
ZOMBIE_LEADER = """
import ctypes, threading, time
def work():
    began = time.monotonic()
    while time.monotonic() - began < 60:
        with open("progress", "w") as progress:
            progress.write(f"{time.monotonic() - began:.1f}")
        time.sleep(0.02)
    open("progress", "w").write("ESCAPED")
threading.Thread(target=work).start()
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: the first thread alone ends; the process shows Z
"""
SIBLING_CHAIN = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
began = time.monotonic()
while time.monotonic() - began < 60:  # a generation lives 0.5 s, under the limit
    child = libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)  # clone(CLONE_PARENT | SIGCHLD)
    if child < 0:  # refused: a plain fork, whose child inherits its clock
        child = os.fork()
    if child:
        os._exit(0)  # its child is its sibling: a child of the agent's main process
    with open("progress", "w") as progress:
        progress.write(f"{time.monotonic() - began:.1f}")
    time.sleep(0.5)
open("progress", "w").write("ESCAPED")
"""
WAITER = """
import subprocess, sys, time
subprocess.run([sys.executable, "command.py"])  # the chain: returns at once, in the background
deadline = time.monotonic() + 120
while time.monotonic() < deadline and open("progress").read() != "ESCAPED":
    before = open("progress").read()
    time.sleep(5)  # the main process's own work: not a command
    if open("progress").read() == before:
        break  # the chain has stopped
print(open("progress").read())
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [FORK_CHAIN, ZOMBIE_LEADER, SIBLING_CHAIN],
    ids=["chain", "zombie-leader", "clone-parent-chain"],
)
def test_a_command_hiding_from_the_watchdog_still_ends_at_the_limit(tmp_path: Path, command):
    """A chain: each process forks and exits between two looks; every child is a fresh orphan,
    but the jail's background work carries one clock. A zombie leader: its first thread has
    ended, the others work on; it is still a command. A chain of siblings (`CLONE_PARENT`):
    each child would be the agent's main process's, a fresh command; the clone is refused.
    Each ends near the limit, not at 60 s."""
    work = tmp_path / "run"
    work.mkdir()
    os.chown(work, JAIL_UID, JAIL_UID)
    (work / "command.py").write_text(command)
    (work / "waiter.py").write_text(WAITER)
    (work / "progress").write_text("")
    os.chown(work / "progress", JAIL_UID, JAIL_UID)
    python = f"{sys.base_prefix}/bin/python3"
    with Jail(python_runtime().with_mounts(Mount(work, writable=True))) as jail:
        watchdog = ShellWatchdog(jail, limit=1)
        main = subprocess.run(
            jail.enter_argv([python, "-I", "waiter.py"], ENV, work),
            capture_output=True,
            text=True,
            timeout=300,
        )
        kills = watchdog.close()

    assert main.stdout.strip() != "ESCAPED", main.stderr
    assert kills  # (a chain member killed has lived ms, its clock inherited)
