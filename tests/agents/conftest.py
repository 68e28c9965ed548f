"""Fixtures every adapter's tests share: the task folder a run works in, and the temp folder
its run folders go to (to check a run leaves nothing behind)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from flashrsi_dagster import scratch

FIRST_TIMEOUT = 3.0
TIMEOUT_DOUBLINGS = 6  # 3 s to 96 s: a machine 30x slower than an idle one still gets there


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `tempfile` (and so the run folders) go during the test, to check they are removed."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setattr(scratch, "_mine", {})  # this process's scratch folder goes there too
    return folder


def left_in(temp_root: Path) -> list[Path]:
    """What runs left in the temp folder: all but the scratch folder this process keeps."""
    mine = scratch.process_dir()
    return [p for p in temp_root.rglob("*") if p not in (mine, mine.parent)]


def timed_out_while_running[T](
    run: Callable[[float, int], T],
    started: Path | Callable[[T], bool],
    first: float = FIRST_TIMEOUT,
) -> tuple[T, float]:
    """What `run(timeout, attempt)` returned when its deadline fell while its command ran,
    and that timeout.

    `started` is a file the scripted command creates first thing, or a test of what `run`
    returned. A deadline that passes before the command starts (a loaded machine may take
    longer than `first` seconds to start the agent and reach it) says nothing about stopping
    it, so the timeout doubles until it does; each attempt gets its own `attempt` number (a
    fresh script: a script's replies are used once)."""
    timeout = first
    for attempt in range(TIMEOUT_DOUBLINGS):
        if isinstance(started, Path):
            started.unlink(missing_ok=True)
        outcome = run(timeout, attempt)
        if started.exists() if isinstance(started, Path) else started(outcome):
            return outcome, timeout
        timeout *= 2
    raise AssertionError(f"the command never started before a timeout of {timeout / 2} s")


def live_commands(command: str) -> list[int]:
    """Live processes (not zombies) whose command line is `command`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if line == command and state != "Z":
            found.append(int(entry.name))
    return found
