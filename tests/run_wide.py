"""Something a test run makes once for all its pytest-xdist workers: with `--dist loadfile` the
files that read it land on both workers, and each would make its own."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def made_once(
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    name: str,
    make: Callable[[Path], object],
) -> Path:
    """`make(folder)` once per run: the first worker to ask makes `folder` in the run's shared
    temporary folder while the others wait on its lock, then read it (a serial run: its own
    temporary folder). Readers must not change it: copy it to change it."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent  # the parent: the run's, all workers'
    root = shared / f"run-wide-{name}"
    root.mkdir(exist_ok=True)
    folder, made = root / name, root / "made"
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker making it: wait, then read its folder
        if not made.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a half-made one (its maker failed)
            make(folder)
            made.touch()
    return folder
