"""A run's processes are found by the environment entry only that run sets, and stopped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from flashrsi_dagster.agents.claude_code.processes import run_processes, stop_processes
from tests.conftest import PATIENCE, wait_until


def _wait_for(path: Path) -> str:
    wait_until(lambda: path.exists() and path.read_text().strip(), f"{path.name} written")
    return path.read_text().strip()


def test_processes_with_the_marker_and_their_descendants_are_found_and_stopped(tmp_path):
    marker = f"CLAUDE_CONFIG_DIR={tmp_path / 'config'}"
    # A shell carrying the marker, whose child has dropped its whole environment.
    shell = subprocess.Popen(
        ["sh", "-c", "env -i sleep 300 & echo $! > child.pid; wait"],
        cwd=tmp_path,
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "config")},
    )
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        child = int(_wait_for(tmp_path / "child.pid"))

        found = run_processes(marker.encode())
        stopped = stop_processes(marker.encode(), grace=2)
        shell.wait(timeout=PATIENCE)

        assert found == stopped == sorted([shell.pid, child])
        assert run_processes(marker.encode()) == []
        assert bystander.poll() is None
    finally:
        for process in (shell, bystander):
            process.kill()
            process.wait()
