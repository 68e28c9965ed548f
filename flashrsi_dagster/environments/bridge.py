"""A command bridge out of a jail into a task's own environment (a Harbor trial).

A jailed agent cannot enter the trial's namespaces itself (that needs root), and must not:
from the host side it could read the task's tests and solution. So the framework serves one
socket inside the jail; the agent's shell runs `bridge_client.py <command>` there, and the
framework runs `prefix + [command]` — the environment's own way in — streaming the output
back and the exit code last. When the client dies (the agent's shell timed out and killed its
process group), the command's whole process group is killed too.

Frames, server to client: a 4-byte big-endian length and that many bytes of output; the
length `EXIT` closes the stream and is followed by the 4-byte signed exit code.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

CLIENT = Path(__file__).with_name("bridge_client.py")
EXIT = 0xFFFFFFFF
GRACE = 0.5  # seconds between SIGTERM and SIGKILL of a command whose client is gone
MAX_REQUEST = 1 << 20
MAX_COMMANDS = 16
"""Commands one jail may run in its task environment at once; more wait for a slot."""


class CommandBridge:
    """Serves `listener` (made in a jail) until `close()`: each connection runs one command."""

    def __init__(self, listener: socket.socket, prefix: Sequence[str]) -> None:
        self._listener, self._prefix = listener, list(prefix)
        self._closed = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_COMMANDS)
        self._thread = threading.Thread(target=self._accept, name="command-bridge", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(5)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            # A slot before a thread: a jail opening thousands of connections gets them
            # served MAX_COMMANDS at a time, not thousands of threads and root processes.
            while not self._slots.acquire(timeout=0.5):
                if self._closed.is_set():
                    connection.close()
                    return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            self._run_one(connection)
        finally:
            self._slots.release()

    def _run_one(self, connection: socket.socket) -> None:
        with connection:
            try:
                command = _read_request(connection)
                process = subprocess.Popen(
                    [*self._prefix, command],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except (OSError, ValueError, KeyError, TypeError):  # a bad request ends itself only
                return
            threading.Thread(
                target=_kill_when_gone, args=(connection, process), daemon=True
            ).start()
            try:
                _relay(process, connection)
            finally:
                _kill_group(process)


def _read_request(connection: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk or len(data) > MAX_REQUEST:
            raise ValueError("no complete request")
        data += chunk
    command = json.loads(data)["command"]
    if not isinstance(command, str) or "\0" in command:
        raise ValueError("the command must be text without NUL")
    return command


def _relay(process: subprocess.Popen[bytes], connection: socket.socket) -> None:
    assert process.stdout is not None
    try:
        while chunk := process.stdout.read1(65536):
            connection.sendall(struct.pack(">I", len(chunk)) + chunk)
        code = process.wait()
        code = 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
        connection.sendall(struct.pack(">Ii", EXIT, code))
    except OSError:
        pass  # the client is gone; the command is killed by the caller


def _kill_when_gone(connection: socket.socket, process: subprocess.Popen[bytes]) -> None:
    """The client sends nothing after its request: end of stream means it died."""
    with contextlib.suppress(OSError):
        connection.recv(1)
    _kill_group(process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
