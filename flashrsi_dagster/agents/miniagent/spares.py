"""Warm spare processes: MiniAgent's entry imports the OpenAI SDK (over a second on a small
machine) before it reads its payload, so one process is always started ahead of the next run."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

ENTRY = Path(__file__).with_name("_entry.py")


class SparePool:
    def __init__(self, env: Mapping[str, str], *, keep: int = 1) -> None:
        self._env = dict(env)
        self._keep = keep
        self._spares: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._counter = itertools.count()
        self._folder = Path(tempfile.mkdtemp(prefix="miniagent-spares-"))

    def warm(self) -> None:
        """Start the spares now, so the first run does not wait for the SDK import."""
        with self._lock:
            while not self._closed and len(self._spares) < self._keep:
                self._spares.append(self._spawn())

    def take(self, stderr_path: Path) -> subprocess.Popen[bytes]:
        """A started entry process waiting for its payload on stdin; its stderr so far is moved
        to `stderr_path` (the file stays its stderr)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the MiniAgent process pool is closed")
            ready = [p for p in self._spares if p.poll() is None]
            process = ready.pop(0) if ready else self._spawn()
            self._spares = ready
            while len(self._spares) < self._keep:
                self._spares.append(self._spawn())
        shutil.move(self._stderr(process), stderr_path)
        return process

    def close(self) -> None:
        with self._lock:
            self._closed = True
            spares, self._spares = self._spares, []
        for process in spares:
            kill_group(process)
        shutil.rmtree(self._folder, ignore_errors=True)

    def _spawn(self) -> subprocess.Popen[bytes]:
        starting = self._folder / f"starting-{next(self._counter)}"
        with open(starting, "wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, str(ENTRY)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=self._env,
                start_new_session=True,  # its own process group, killed as one
            )
        starting.rename(self._stderr(process))
        return process

    def _stderr(self, process: subprocess.Popen[bytes]) -> Path:
        return self._folder / f"{process.pid}.stderr"


def kill_group(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
    if sig == signal.SIGKILL:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
