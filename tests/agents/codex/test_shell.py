"""The shell tool and the POSIX shell snapshot: created at session start from the login shell,
sourced before each command, removed at the end; commands bounded in time and output."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.agents.conftest import timed_out_while_running

PROFILE = """\
export GREETING=howdy
greet() { echo "hi $1"; }
alias ll='ls -l'
"""


@pytest.fixture
def login_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text(PROFILE)
    return {"PATH": os.environ["PATH"], "HOME": str(home)}


def test_the_snapshot_captures_the_login_shell_and_is_restored_then_removed(
    core, tmp_path, login_env
):
    home = Path(login_env["HOME"])
    snapshot = core.shell_snapshot.create(home, "thread-1", tmp_path, login_env)

    assert snapshot == home / "shell_snapshots" / "thread-1.sh"
    text = snapshot.read_text()
    assert "greet ()" in text and "GREETING" in text and "alias ll=" in text
    assert "declare -x PWD=" not in text and "declare -x SHLVL=" not in text
    argv = core.shell_snapshot.restore(["bash", "-lc", "greet bob; echo $GREETING"], snapshot)
    plain = {"PATH": os.environ["PATH"]}  # no login, no profile: only the snapshot can help
    done = subprocess.run(argv, env=plain, capture_output=True, text=True, check=True)
    assert done.stdout == "hi bob\nhowdy\n"

    core.shell_snapshot.remove(snapshot)
    assert not snapshot.exists() and not snapshot.parent.exists()


def test_restore_is_conditional(core, tmp_path):
    snapshot = tmp_path / "s.sh"
    assert core.shell_snapshot.restore(["bash", "-lc", "true"], snapshot) == ["bash", "-lc", "true"]
    snapshot.write_text("")
    assert core.shell_snapshot.restore(["ls", "-l", "x"], snapshot) == ["ls", "-l", "x"]
    assert core.shell_snapshot.restore(["python3", "-c", "1"], snapshot) == ["python3", "-c", "1"]


def test_a_timed_out_command_is_killed_with_its_group_and_output_is_bounded(core, tmp_path):
    shell = core.shell.Shell(tmp_path, {"PATH": os.environ["PATH"]}, None, timeout=30, limit=100)
    command = ["bash", "-c", "echo $$ > pgid; sleep 300 & touch started; sleep 300"]
    slow, _ = timed_out_while_running(
        lambda timeout, _: shell.run(command, None, timeout), tmp_path / "started", first=0.5
    )
    assert slow.timed_out
    pgid = int((tmp_path / "pgid").read_text())
    with pytest.raises(ProcessLookupError):
        _wait_gone(pgid)

    loud = shell.run(["bash", "-c", "head -c 5000 /dev/zero | tr '\\0' x"], None, None)
    assert len(loud.output) < 200 and "bytes cut" in loud.output
    assert loud.exit_code == 0


def test_background_processes_end_with_the_session(core, tmp_path):
    shell = core.shell.Shell(tmp_path, {"PATH": os.environ["PATH"]}, None, timeout=30, limit=1000)
    done = shell.run(["bash", "-c", "sleep 300 & echo $! > pid"], None, None)
    assert done.exit_code == 0 and not done.timed_out  # the service outlives the command
    pid = int((tmp_path / "pid").read_text())
    os.kill(pid, 0)
    shell.close()
    with pytest.raises(ProcessLookupError):
        _wait_gone(pid, group=False)


def test_a_workdir_outside_the_cwd_is_refused(core, tmp_path):
    shell = core.shell.Shell(tmp_path, {"PATH": os.environ["PATH"]}, None, timeout=5, limit=100)
    with pytest.raises(ValueError, match="leaves the working folder"):
        shell.run(["pwd"], "..", None)


def _wait_gone(pid: int, group: bool = True) -> None:
    """Raises ProcessLookupError once `pid` (or its group) is gone (zombies reaped by us)."""
    deadline = time.monotonic() + 60  # far less than `sleep 300`; a loaded machine is slow
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)
        (os.killpg if group else os.kill)(pid, 0)
        if _zombie(pid):
            raise ProcessLookupError
        time.sleep(0.02)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False
