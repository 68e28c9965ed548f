"""The command bridge: a jailed shell reaches its task's environment, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.environments.bridge import CLIENT, CommandBridge
from flashrsi_dagster.environments.jail import Jail, Mount
from flashrsi_dagster.environments.joining import JAIL_UID
from flashrsi_dagster.environments.runtime import python_runtime
from tests.conftest import PATIENCE, needs_jails, wait_until

pytestmark = needs_jails


@pytest.fixture
def jail(tmp_path: Path):
    work = tmp_path / "run"
    work.mkdir()
    os.chown(work, JAIL_UID, JAIL_UID)
    spec = python_runtime().with_mounts(Mount(work, writable=True), Mount(CLIENT))
    with Jail(spec) as jail:
        yield jail, work


def _client(jail: Jail, work: Path, command: str) -> subprocess.Popen:
    argv = [os.path.realpath(sys.executable), "-I", "-S", str(CLIENT), command]
    return subprocess.Popen(
        jail.enter_argv(argv, {"PATH": "/usr/bin:/bin"}, work),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_command_runs_through_the_prefix_with_its_output_and_exit_code(jail, tmp_path):
    jail, work = jail
    outside = tmp_path / "environment-only.txt"
    outside.write_text("seen from the environment\n")
    # The "environment" here is the host itself, entered through `bash -c`.
    bridge = CommandBridge(jail.listen(8087), ["bash", "-c"])
    try:
        client = _client(jail, work, f"cat {outside}; echo to-stderr >&2; exit 7")
        out, _ = client.communicate(timeout=PATIENCE)
    finally:
        bridge.close()

    assert client.returncode == 7
    assert out == "seen from the environment\nto-stderr\n"


def test_when_the_client_is_killed_the_command_dies_too(jail):
    jail, work = jail
    bridge = CommandBridge(jail.listen(8087), ["bash", "-c"])
    try:
        client = _client(jail, work, "sleep 913")
        wait_until(lambda: _pids("sleep 913"), "the bridged command started")
        # what the agent's shell does to a command past its timeout: kill the client
        for pid in _pids(f"{os.path.realpath(sys.executable)} -I -S {CLIENT}"):
            os.kill(int(pid), 9)
        client.wait(PATIENCE)
        wait_until(lambda: not _pids("sleep 913"), "the command killed", timeout=60)
    finally:
        bridge.close()

    assert not _pids("sleep 913")


def _pids(pattern: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"^{pattern}"], capture_output=True, text=True)
    return found.stdout.split()
