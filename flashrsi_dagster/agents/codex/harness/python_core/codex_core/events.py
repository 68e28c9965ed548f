"""The JSONL event stream, in the shape `codex exec --json` prints: `thread.started`,
`turn.started`, `item.started` / `item.completed` (agent_message, command_execution,
file_change, todo_list, error), `turn.completed` with usage, `turn.failed`, `error`.
Every line is redacted (the run's token) and flushed as it is written."""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any, TextIO


class Events:
    def __init__(self, secrets: list[str], stream: TextIO | None = None) -> None:
        self._secrets = [s for s in secrets if s]
        self._stream = stream or sys.stdout
        self._ids = itertools.count()
        self.tags: dict[str, Any] = {}
        """Fields every item gets while set: the model call (`turn`) an item belongs to, and
        for a tool's item the call it answers (`tool`, `arguments`)."""

    def emit(self, event_type: str, /, **fields: Any) -> None:
        line = json.dumps({"type": event_type, **fields}, ensure_ascii=False)
        for secret in self._secrets:
            line = line.replace(secret, "[REDACTED]")
        self._stream.write(line + "\n")
        self._stream.flush()

    def item(self, item_type: str, /, **fields: Any) -> dict[str, Any]:
        item = {"id": f"item_{next(self._ids)}", "type": item_type, **self.tags, **fields}
        self.emit("item.completed", item=item)
        return item
