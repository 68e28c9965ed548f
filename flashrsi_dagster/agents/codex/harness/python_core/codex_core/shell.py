"""`shell`: one argv command in the working folder (or a `workdir` inside it), with a timeout
and bounded output. Each command is its own process group; a timed-out one is killed whole,
and every group a session started is killed when the session ends."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from codex_core import shell_snapshot


@dataclass
class CommandResult:
    command: list[str]
    output: str
    exit_code: int | None
    timed_out: bool
    duration: float

    def for_model(self) -> str:
        status = "timed out" if self.timed_out else f"exit code {self.exit_code}"
        return f"{status}, {self.duration:.1f} s\nOutput:\n{self.output}"


class Shell:
    def __init__(
        self,
        cwd: Path,
        env: dict[str, str],
        snapshot: Path | None,
        timeout: float,
        limit: int,
        prefix: list[str] | None = None,
    ) -> None:
        self.cwd, self.env, self.snapshot = cwd, env, snapshot
        self.timeout, self.limit = timeout, limit
        self.prefix = prefix
        """The way into the task's own environment (its commands take one script string)."""
        self._groups: set[int] = set()

    def _argv(self, argv: list[str], workdir: str | None) -> list[str]:
        if self.prefix is None:
            return shell_snapshot.restore(argv, self.snapshot)
        # In the task's environment: one script, run by its shell; the snapshot describes the
        # jail's login shell, not the environment's, so it is not sourced there.
        is_script = len(argv) == 3 and argv[0] in shell_snapshot.SHELLS and argv[1] in ("-c", "-lc")
        script = argv[2] if is_script else shlex.join(argv)
        if workdir:
            script = f"cd {shlex.quote(workdir)} && {script}"
        return [*self.prefix, script]

    def run(self, argv: list[str], workdir: str | None, timeout: float | None) -> CommandResult:
        cwd = self.cwd if self.prefix else self._workdir(workdir)
        command = self._argv(argv, workdir)
        seconds = min(timeout or self.timeout, self.timeout)
        clock = time.monotonic()
        # A file, not a pipe: a background process the command leaves running keeps a pipe
        # open, and the command would look unfinished until it ends.
        with tempfile.TemporaryFile() as sink:
            try:
                process = subprocess.Popen(
                    command,
                    cwd=cwd,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                message = f"cannot start {argv[0]!r}: {exc.strerror}"
                return CommandResult(argv, message, None, False, 0.0)
            self._groups.add(process.pid)
            timed_out = False
            try:
                process.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill(process.pid)
                process.wait()
            output = self._read(sink)
        return CommandResult(argv, output, process.returncode, timed_out, time.monotonic() - clock)

    def _read(self, sink) -> str:
        """At most `limit` characters: the head and the tail of what the command printed."""
        size = sink.seek(0, os.SEEK_END)
        half = self.limit // 2
        if size <= self.limit:
            sink.seek(0)
            return sink.read().decode(errors="replace")
        sink.seek(0)
        head = sink.read(half).decode(errors="replace")
        sink.seek(size - half)
        tail = sink.read(half).decode(errors="replace")
        return f"{head}\n[... {size - 2 * half} bytes cut ...]\n{tail}"

    def _workdir(self, workdir: str | None) -> Path:
        if not workdir:
            return self.cwd
        path = (self.cwd / workdir).resolve()
        root = self.cwd.resolve()
        if path != root and root not in path.parents:
            raise ValueError(f"workdir {workdir!r} leaves the working folder")
        return path

    def close(self) -> None:
        """Kill every process group this session started (background services included)."""
        for group in self._groups:
            _kill(group)
        self._groups.clear()


def _kill(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
