"""The rollout record: one JSON line per finished rollout, appended and fsynced as it lands.

A crash can tear at most the line being written; reading skips a torn last line, so every
rollout that finished before the crash is kept and none is counted twice.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from pydantic import ValidationError

from flashrsi_dagster.records import RecordError, Redactor, Trajectory


class RolloutRecord:
    def __init__(self, path: Path, redactor: Redactor) -> None:
        self.path = Path(path)
        self._redactor = redactor
        self._lock = threading.Lock()

    def load(self) -> list[Trajectory]:
        if not self.path.exists():
            return []
        lines = self.path.read_bytes().split(b"\n")
        out = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                out.append(Trajectory.model_validate_json(line))
            except ValidationError as exc:
                if number == len(lines) or (number == len(lines) - 1 and not lines[-1]):
                    continue  # torn by a crash mid-write: that rollout never finished
                raise RecordError(f"{self.path}: line {number} is not a trajectory: {exc}") from exc
        return out

    def append(self, trajectory: Trajectory) -> None:
        data = self._redactor.value(trajectory.model_dump(mode="json"))
        line = json.dumps(data, ensure_ascii=False).encode() + b"\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._heal()
            with open(self.path, "ab") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())

    def _heal(self) -> None:
        """Cut a torn last line left by a crash, so the next line starts clean."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) == b"\n":
                return
            data = self.path.read_bytes()
            handle.truncate(data.rfind(b"\n") + 1)
