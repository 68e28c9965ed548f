"""Temp data: one root, a folder per process named by pid and start time, and the sweep that
removes what killed processes left behind (a Worker's edit folder with its history, say)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from flashrsi_dagster import scratch

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from flashrsi_dagster import scratch
    edit = scratch.mkdtemp("edit-")
    (edit / ".history" / "trajectories").mkdir(parents=True)
    (edit / ".history" / "trajectories" / "round.json").write_text("{}")
    print(edit, flush=True)
    if sys.argv[1] == "wait":
        time.sleep(120)
    """
)


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of its own, for this process and the children it starts."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(scratch, "_mine", {})
    return folder


def _holder(mode: str) -> tuple[subprocess.Popen, Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, mode], stdout=subprocess.PIPE, text=True
    )
    edit = Path(child.stdout.readline().strip())
    return child, edit


def test_a_killed_process_folder_is_swept_and_a_live_one_is_kept(temp):
    killed, dead_edit = _holder("wait")
    alive, live_edit = _holder("wait")
    try:
        assert dead_edit.parent.name == f"{killed.pid}-{scratch.start_time(killed.pid)}"
        assert dead_edit.parent.parent == scratch.root() == temp / f"flashrsi-{os.getuid()}"
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert (dead_edit / ".history").is_dir()  # what kill -9 leaves behind

        removed = scratch.clean_stale()

        assert removed == [dead_edit.parent]
        assert not dead_edit.parent.exists()
        assert (live_edit / ".history" / "trajectories" / "round.json").exists()
    finally:
        alive.kill()
        alive.wait()
        killed.stdout.close()
        alive.stdout.close()
    assert scratch.clean_stale() == [live_edit.parent]


def test_the_first_folder_a_process_makes_sweeps_first(temp):
    killed, dead_edit = _holder("wait")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    killed.stdout.close()

    with scratch.scratch_dir("target-") as mine:
        assert mine.parent == scratch.process_dir()
        assert not dead_edit.parent.exists()
    assert not mine.exists()


def test_a_reused_pid_does_not_adopt_a_dead_folder_and_other_names_are_left_alone(temp):
    root = scratch.root()
    reused = root / f"{os.getpid()}-1"  # this pid, but a process that started at another time
    (reused / "edit-x").mkdir(parents=True)
    for name in ("notes", "abc-def", "12"):
        (root / name).mkdir()

    assert scratch.clean_stale() == [reused]
    assert sorted(p.name for p in root.iterdir()) == ["12", "abc-def", "notes"]


def test_a_clean_exit_removes_the_process_folder(temp):
    child, edit = _holder("exit")
    assert child.wait() == 0
    child.stdout.close()

    assert not edit.parent.exists()


def test_read_only_contents_are_removed_too(temp):
    with scratch.scratch_dir("edit-") as folder:
        (folder / "snapshot" / "prompts").mkdir(parents=True)
        (folder / "snapshot" / "prompts" / "system.md").write_text("x")
        for path in (folder / "snapshot" / "prompts", folder / "snapshot"):
            path.chmod(0o555)
    assert not folder.exists()


def test_a_root_that_is_not_this_users_folder_is_refused(temp):
    (temp / "elsewhere").mkdir()
    (temp / f"flashrsi-{os.getuid()}").symlink_to(temp / "elsewhere")

    with pytest.raises(RuntimeError, match="not a folder of this user"):
        scratch.root()


def test_a_fork_server_starts_under_a_temp_folder_too_long_for_a_socket(tmp_path: Path):
    """Its socket goes in a short folder of multiprocessing's; everything else in TMPDIR."""
    long_tmp = tmp_path / ("x" * 100)
    long_tmp.mkdir()
    code = textwrap.dedent(
        """
        import tempfile
        from multiprocessing import forkserver, util
        from flashrsi_dagster import scratch
        scratch.short_socket_folder()
        forkserver.ensure_running()
        print(tempfile.gettempdir(), util.get_temp_dir(), sep="\\n")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TMPDIR": str(long_tmp)},
        capture_output=True,
        text=True,
    )

    assert done.returncode == 0, done.stderr
    kept, sockets = done.stdout.split()
    assert kept == str(long_tmp)
    assert sockets.startswith("/tmp/pymp-") and not Path(sockets).exists()  # removed at exit
