"""The Dagster instance of a home folder, and the UI on it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from flashrsi_dagster.jobs.storage import CONFIG as STORAGE

TELEMETRY_OFF = "telemetry:\n  enabled: false\n"
RUN_QUEUE = """run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""
"""Runs launched from the UI or by a sensor wait in the queue until the daemon looks (every
5 s by default): a round waits 1 s at most."""
SETTINGS = TELEMETRY_OFF + STORAGE + RUN_QUEUE


def instance_dir(home: Path) -> Path:
    """The Dagster instance of a home folder (`DAGSTER_HOME`), created on first use with
    telemetry off (nothing leaves the machine), SQLite storage with open connections
    (`storage.py`) and a run queue looked at every second. An instance made with telemetry
    off alone (before these) is given the rest: the files stay the same."""
    folder = Path(home) / ".dagster"
    settings = folder / "dagster.yaml"
    if not settings.exists() or settings.read_text() == TELEMETRY_OFF:
        folder.mkdir(parents=True, exist_ok=True)
        settings.write_text(SETTINGS)
    return folder


def persistent_instance(home: Path) -> dg.DagsterInstance:
    folder = instance_dir(home)
    os.environ["DAGSTER_HOME"] = str(folder)  # the CLI's own process: the instance lives here
    return dg.DagsterInstance.get()


def ui(home: Path, port: int) -> int:
    """`dagster dev` on the experiments' instance, from the folder holding the home."""
    env = {**os.environ, "DAGSTER_HOME": str(instance_dir(home))}
    command = [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-m",
        "flashrsi_dagster.definitions",
        "-p",
        str(port),
    ]
    return subprocess.call(command, cwd=Path(home).resolve().parent, env=env)
