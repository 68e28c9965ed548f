"""Starting MiniAgent runs: each run is its own process, forked by a server process that has
already imported the OpenAI SDK (`_entry.py --fork-server`), so a start costs milliseconds and
no per-rollout SDK import. The server runs with the environment given here (secrets removed).

Agents share one server per environment for the life of the process: a Dagster run builds
and closes its agents every round, and each new server would pay the SDK import (seconds on a
small machine) again. Keys and settings travel with each run's payload, never in the server's
environment, so sharing it shares nothing secret."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import json
import os
import signal
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

from flashrsi_dagster.environments import joining
from flashrsi_dagster.environments.runtime import interpreter, site_packages

ENTRY = Path(__file__).with_name("_entry.py")

_shared: dict[str, ForkServer] = {}
_shared_lock = threading.Lock()


class ForkServer:
    @classmethod
    def shared(cls, env: Mapping[str, str]) -> ForkServer:
        """The process's server for `env`, started if needed. Idle servers of other
        environments are stopped (they restart on their next run), so tests that change the
        environment do not pile them up."""
        key = hashlib.sha256(json.dumps(sorted(env.items())).encode()).hexdigest()
        with _shared_lock:
            server = _shared.get(key)
            if server is None:
                for other in _shared.values():
                    if other.idle:
                        other.close()
                server = _shared[key] = cls(env)
                atexit.register(server.close)
        server.start()
        return server

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._process: subprocess.Popen[bytes] | None = None
        self._started: dict[int, _Slot] = {}
        self._running: dict[int, _Slot] = {}

    def start(self) -> None:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                # -I -S: no site, no user paths, no PYTHON* variables; the server imports
                # from site-packages what the harness needs, and nothing of the framework.
                self._process = subprocess.Popen(
                    [*interpreter(), "-I", "-S", str(ENTRY), "--fork-server", *_server_args()],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=self._env,
                    start_new_session=True,
                )
                threading.Thread(target=self._listen, args=(self._process,), daemon=True).start()

    def run(self, payload: dict) -> Run:
        self.start()
        slot = _Slot()
        with self._lock:
            request_id = next(self._ids)
            self._started[request_id] = slot
            assert self._process is not None and self._process.stdin is not None
            self._process.stdin.write(
                json.dumps({"id": request_id, "payload": payload}).encode() + b"\n"
            )
            self._process.stdin.flush()
        if not slot.started.wait(60) or slot.pid is None:
            raise RuntimeError("the MiniAgent fork server did not start the run")
        return Run(slot)

    @property
    def idle(self) -> bool:
        with self._lock:
            return not self._started and not self._running

    def close(self) -> None:
        with self._lock:
            process, self._process = self._process, None
            running = list(self._running.values())
        for slot in running:
            slot.signal(signal.SIGKILL)
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def _listen(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            kind, *fields = raw.decode().split()
            with self._lock:
                if kind == "started":
                    slot = self._started.pop(int(fields[0]))
                    slot.pid = int(fields[1])
                    self._running[slot.pid] = slot
                    slot.started.set()
                elif kind == "exited" and int(fields[0]) in self._running:
                    slot = self._running.pop(int(fields[0]))
                    slot.exit_code = int(fields[1])
                    slot.exited.set()
        with self._lock:  # the server is gone: nothing it started will be reported any more
            for slot in [*self._started.values(), *self._running.values()]:
                slot.started.set()
                slot.exited.set()
            self._started.clear()
            self._running.clear()


def _server_args() -> tuple[str, str]:
    """Where the server imports the harness's packages from, and the jail entry it loads
    (made on first use, not at import: the runtime folder may have to be assembled)."""
    return str(site_packages()), str(joining.__file__)


class _Slot:
    def __init__(self) -> None:
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.started = threading.Event()
        self.exited = threading.Event()

    def signal(self, sig: int) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)


class Run:
    """One MiniAgent process, waited for with a deadline and always killed as a group."""

    def __init__(self, slot: _Slot) -> None:
        self._slot = slot

    @property
    def exit_code(self) -> int | None:
        return self._slot.exit_code

    def cancel(self, grace: float) -> None:
        """SIGTERM (the run stops its own tool processes), then SIGKILL after `grace`."""
        self._slot.signal(signal.SIGTERM)
        self._slot.exited.wait(grace)
        self._slot.signal(signal.SIGKILL)

    def wait(self, timeout: float, grace: float) -> bool:
        """Wait up to `timeout`; then cancel (SIGTERM) and kill after `grace`. True if the
        deadline was hit. Leftovers of the run's process group are killed in any case."""
        timed_out = not self._slot.exited.wait(timeout)
        if timed_out:
            self.cancel(grace)
        self._slot.signal(signal.SIGKILL)
        self._slot.exited.wait(5)
        return timed_out
