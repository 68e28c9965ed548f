"""The rollout record: one JSON line per finished rollout, appended and fsynced as it lands.

Lines are appended through the experiment's `RecordStore`, so each is an entry of its
integrity chain. A crash can tear at most the line being written: reading skips a torn last
line, and the chain's next writer cuts it (see `records/journal.py`), so every rollout that
finished before the crash is kept and none is counted twice.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from flashrsi_dagster.records import RecordError, RecordStore, Trajectory


class RolloutRecord:
    def __init__(self, path: Path, store: RecordStore | None = None) -> None:
        """`store` writes the lines; without one the record can only be read."""
        self.path = Path(path)
        self._store = store

    def load(self) -> list[Trajectory]:
        if not self.path.exists():
            return []
        lines = self.path.read_bytes().split(b"\n")
        out = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if number == len(lines) and line:
                continue  # no newline yet: torn by a crash mid-write, that rollout never finished
            try:
                out.append(Trajectory.model_validate_json(line))
            except ValidationError as exc:
                raise RecordError(f"{self.path}: line {number} is not a trajectory: {exc}") from exc
        return out

    def append(self, trajectory: Trajectory) -> None:
        if self._store is None:
            raise RuntimeError(f"{self.path}: opened read-only (no record store)")
        data = self._store.redactor.value(trajectory.model_dump(mode="json"))
        line = json.dumps(data, ensure_ascii=False).encode() + b"\n"
        self._store.append_line(self.path, line)
