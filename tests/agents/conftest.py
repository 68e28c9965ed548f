"""Fixtures every adapter's tests share: the task folder a run works in, and the temp folder
its run folders go to (to check a run leaves nothing behind)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from flashrsi_dagster import scratch


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
