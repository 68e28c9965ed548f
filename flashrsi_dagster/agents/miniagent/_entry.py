"""MiniAgent's process entry: `python _entry.py` reads one JSON object on stdin, runs the loop
from the snapshot folder it names, and writes the result (redacted) to the `output` path after
every turn. It imports nothing from the framework.

The OpenAI SDK is imported before stdin is read: a spare process started ahead of time is then
ready the moment a run is handed to it. On SIGTERM the run is cancelled: the running tool kills
its process group and the partial result is written; the caller kills us 2 s later regardless.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path


def main() -> int:
    # Installed first: a cancel that arrives while we are still starting must not kill us
    # before we can say so.
    cancel = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: _cancel(cancel))
    try:
        import openai  # noqa: F401  - warm import, see the module docstring

        payload = json.loads(sys.stdin.read())
    except KeyboardInterrupt:
        return 128 + signal.SIGTERM
    output = Path(payload.pop("output"))
    # Our own folder is not the harness's business: the harness imports from its snapshot.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent]
    sys.path.insert(0, payload["files_dir"])
    os.chdir(payload["working_dir"])

    from runtime.agent import run
    from runtime.trace import Redactor

    redactor = Redactor([payload["llm"].get("api_key") or "", *payload.pop("secrets", [])])
    result = None
    try:
        result = run({**payload, "cancel": cancel}, on_step=lambda r: _save(output, r, redactor))
    finally:
        if result is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the last write finish
            _save(output, result, redactor)
    return 0


def _cancel(event: threading.Event) -> None:
    if event.is_set():
        return
    event.set()
    # Interrupts a blocking model call or tool wait in the main thread.
    raise KeyboardInterrupt


def _save(path: Path, result: dict, redactor) -> None:
    data = json.dumps(redactor.value(result), ensure_ascii=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(data)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
