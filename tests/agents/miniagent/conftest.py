"""The MiniAgent harness, imported the way the adapter loads a snapshot: its folder on sys.path."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

HARNESS = Path(__file__).resolve().parents[3] / "flashrsi_dagster/agents/miniagent/harness"
TOP_LEVEL = {"runtime", "tools"}  # the harness's packages, top-level once its folder is on the path


@pytest.fixture(scope="session")
def harness() -> Iterator[SimpleNamespace]:
    """`context`, `workspace` and `tools` modules of the harness in this checkout."""
    sys.path.insert(0, str(HARNESS))
    try:
        yield SimpleNamespace(
            context=importlib.import_module("runtime.context"),
            workspace=importlib.import_module("runtime.workspace"),
            tools=importlib.import_module("tools"),
        )
    finally:
        sys.path.remove(str(HARNESS))
        for name in [m for m in sys.modules if m.split(".")[0] in TOP_LEVEL]:
            del sys.modules[name]


@pytest.fixture
def ctx(harness: SimpleNamespace, tmp_path: Path):
    """A context on an empty task folder; the harness folder is where `make_harness` writes."""
    working_dir = tmp_path / "work"
    working_dir.mkdir()
    return harness.context.Context(
        working_dir=working_dir,
        files_dir=tmp_path / "harness",
        shell_timeout=10.0,
        output_limit=2_000,
    )


def live_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that are not zombies (PID 1 here may never reap orphans)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)"
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def assert_group_gone(pgid: int) -> None:
    deadline = time.monotonic() + 60  # SIGKILL is delivered asynchronously (late under load)
    while live_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert live_members(pgid) == []
