"""The core's process entry: `python -I -S main.py <site-packages>` with the session's
payload as one JSON object on stdin; JSONL events on stdout; exit code 0 after a final answer.

It imports nothing of the framework: its own package (beside this file), the standard library,
and `openai`/`yaml` from the site-packages folder it is given."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path


def main() -> int:
    signal.signal(signal.SIGTERM, _cancel)  # first: a cancel while starting must be seen
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if len(sys.argv) > 1:
        sys.path.append(sys.argv[1])
    payload = json.loads(sys.stdin.read())
    from codex_core.events import Events
    from codex_core.session import run

    events = Events(payload.pop("secrets", []))
    return 0 if run(payload, events) else 1


def _cancel(*_: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
