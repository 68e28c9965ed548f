"""A jail with a writable run folder, as the jail and seccomp tests attack it from inside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flashrsi_dagster.environments.jail import Jail, Mount
from flashrsi_dagster.environments.joining import JAIL_UID
from flashrsi_dagster.environments.runtime import python_runtime


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    os.chown(folder, JAIL_UID, JAIL_UID)
    return folder


@pytest.fixture
def jail(work: Path):
    with Jail(python_runtime().with_mounts(Mount(work, writable=True))) as jail:
        yield jail
