"""The Dagster instance of a home folder, and the UI on it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from flashrsi_dagster.jobs.run_queue import RunLimits, run_queue
from flashrsi_dagster.jobs.storage import CONFIG as STORAGE

TELEMETRY_OFF = "telemetry:\n  enabled: false\n"
UNLIMITED_QUEUE = """run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""
"""The run queue homes were given before it had limits (such a file gets them)."""
RUN_QUEUE = run_queue(RunLimits())
"""Dagster's run queue with the default limits (`run_queue.py`)."""
SETTINGS = TELEMETRY_OFF + STORAGE + RUN_QUEUE
GENERATED_BEFORE = (TELEMETRY_OFF, TELEMETRY_OFF + STORAGE + UNLIMITED_QUEUE)
"""What earlier versions wrote: a file that holds exactly one of these is brought up to date."""


def instance_dir(home: Path, limits: RunLimits | None = None) -> Path:
    """The Dagster instance of a home folder (`DAGSTER_HOME`), created on first use with
    telemetry off (nothing leaves the machine), SQLite storage with open connections
    (`storage.py`) and a run queue looked at every second, with `limits` (default
    `RunLimits()`). A file an earlier version made (`GENERATED_BEFORE`) is given the rest;
    any other is the user's and stays as it is."""
    folder = Path(home) / ".dagster"
    settings = folder / "dagster.yaml"
    if not settings.exists() or settings.read_text() in GENERATED_BEFORE:
        folder.mkdir(parents=True, exist_ok=True)
        queue = RUN_QUEUE if limits is None else run_queue(limits)
        settings.write_text(TELEMETRY_OFF + STORAGE + queue)
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
