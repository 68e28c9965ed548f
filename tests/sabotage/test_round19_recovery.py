"""Sabotage, nineteenth red-team pass (issue 22), on the kinds other than the content check and
the endpoint: limits held outside evolvable code and the jail around a joined CLI, experiments
that always recover, names, and the smaller items.

Aimed at: a jailed CLI (Claude Code's, joined by `environments/joining.py`) and the terminal
it was started from; ...

Each attack is one test. One that got through on main was written here first, failing, then
closed by the smallest fix; the others held on main and stay as tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from flashrsi_dagster.environments.jail import Jail, Mount
from flashrsi_dagster.environments.joining import JAIL_UID
from flashrsi_dagster.environments.runtime import python_runtime
from tests.conftest import PATIENCE, needs_jails
from tests.environments.test_jail import ENV

# -- a joined CLI and the terminal it was started from ----------------------------------------

TYPED = b"typed-by-the-user\n"
READ_THE_TERMINAL = """
import json, os, termios
found = {}
def tried(name, fd):
    try:
        os.set_blocking(fd, False)
        found[name] = os.read(fd, 100).decode()
    except OSError as exc:
        found[name] = f"errno {exc.errno}"
    try:  # the user's echo switched off: it stays off after the run
        attrs = termios.tcgetattr(fd)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
        found[name + " echo"] = "switched off"
    except termios.error as exc:
        found[name + " echo"] = f"errno {exc.args[0]}"
try:
    tried("/dev/tty", os.open("/dev/tty", os.O_RDWR))
except OSError as exc:
    found["/dev/tty"] = f"errno {exc.errno}"
tried("fd 0", 0)
tried("fd 2", 2)
print("FOUND", json.dumps(found))
"""


@pytest.fixture(scope="module")
def from_a_terminal(tmp_path_factory) -> tuple[dict[str, str], bool]:
    """A jailed program started through `Jail.enter_argv` (as Claude Code's CLI is) by a
    process whose controlling terminal, standard input and error are a terminal the user has
    typed a line into: what the program read or changed there, and whether the terminal's
    echo is still on after it."""
    work = tmp_path_factory.mktemp("round19-tty")
    os.chown(work, JAIL_UID, JAIL_UID)
    (work / "read.py").write_text(READ_THE_TERMINAL)
    terminal, side = os.openpty()
    try:
        with Jail(python_runtime().with_mounts(Mount(work, writable=True))) as jail:
            argv = jail.enter_argv([f"{sys.base_prefix}/bin/python3", "-I", "read.py"], ENV, work)
            os.write(terminal, TYPED)  # typed ahead, waiting in the terminal's input
            result = subprocess.run(  # `setsid -c`: the terminal controls the new session
                ["setsid", "-c", *argv],
                stdin=side,
                stdout=subprocess.PIPE,
                stderr=side,
                text=True,
                timeout=PATIENCE,
            )
        echo = bool(termios.tcgetattr(side)[3] & termios.ECHO)
    finally:
        os.close(side)
        os.close(terminal)
    assert "FOUND " in result.stdout, result
    return json.loads(result.stdout.split("FOUND ", 1)[1]), echo


@needs_jails
@pytest.mark.parametrize("way", ["/dev/tty", "fd 0", "fd 2"])
def test_a_joined_cli_reads_nothing_the_user_types_at_the_host_s_terminal(from_a_terminal, way):
    """Attack: a command of a jailed CLI (Claude Code's SDK starts the CLI in the caller's
    session, its stderr the caller's) reads the host's terminal through `/dev/tty` or an
    inherited standard stream: what the user types while `flashrsi run` runs (a password
    typed ahead included). Got through on main through `/dev/tty` (the line typed was read:
    the launcher kept the caller's session, and only `TIOCSTI` was filtered). Stops it:
    `joining.py` gives the program a session of its own (no controlling terminal) and a
    terminal among its standard streams is replaced by `/dev/null`."""
    found, _ = from_a_terminal

    assert TYPED.decode() not in found[way], found


@needs_jails
def test_a_joined_cli_leaves_the_host_s_terminal_as_it_was(from_a_terminal):
    """Attack: the same program switches off the terminal's echo (any `termios` change: raw
    mode, the line discipline), which stays so after the run: the user's next password is
    shown, or the shell unusable. Got through on main (echo off after the run, through
    `/dev/tty`, fd 0 and fd 2). Stops it: the same; the program holds no terminal."""
    found, echo = from_a_terminal

    assert echo, found
