"""Run one bash command in the task folder, bounded in time and output.

The command gets its own process group, so a timeout or a cancel can stop everything it
started, while a normal finish leaves its background services running for later commands.
Output goes to an anonymous (already unlinked) temporary file rather than a pipe: a
background process that inherits the descriptor cannot keep us waiting for end-of-file, and
nothing is left on disk once the last holder closes it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from runtime.context import Cancelled, Context
from runtime.tool_result import bound

from tools.base import BaseTool, ToolError, string_arg

POLL = 0.05  # seconds between checks of exit, deadline and ctx.cancel
GRACE = 0.5  # seconds between SIGTERM and SIGKILL


class ShellTool(BaseTool):
    name = "shell"

    def _run(self, arguments: dict[str, Any], ctx: Context) -> str:
        """Tool use: one bash command in the task's folder (or its environment), stopped at
        its timeout; the answer is its exit status and its bounded output."""
        command = string_arg(arguments, "command")
        if not command.strip() or "\0" in command:
            raise ToolError("'command' must be non-empty text without NUL characters")
        timeout = _timeout(arguments.get("timeout"), ctx.shell_timeout)
        if ctx.cancel.is_set():
            raise Cancelled("cancelled before the command started")
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(
                [*(ctx.shell_prefix or ["bash", "-c"]), command],
                cwd=ctx.working_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            finished = _wait(proc, timeout, ctx.cancel)
            output = _read(out, ctx.output_limit)
        if not finished:
            return f"Error: command timed out after {timeout:g} s\nPartial output:\n{output}"
        return f"{_status(proc.returncode)}\n{output or '(no output)'}"


def _timeout(value: Any, limit: float) -> float:
    if value is None:
        return limit
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ToolError("'timeout' must be a positive number of seconds")
    return min(float(value), limit)


def _wait(proc: subprocess.Popen, timeout: float, cancel: threading.Event) -> bool:
    """True when bash exited by itself; False after a timeout (the group is then killed).

    Any exception reaching this thread (Cancelled, or KeyboardInterrupt and the like raised by
    a signal handler) kills the group before it propagates.
    """
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                proc.wait(timeout=POLL)
                return True
            except subprocess.TimeoutExpired:
                pass
            if cancel.is_set():
                raise Cancelled("the shell command was cancelled")
            if time.monotonic() >= deadline:
                kill_group(proc)
                return False
    except BaseException:
        kill_group(proc)
        raise


def kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the command's process group, SIGKILL whatever is left after GRACE seconds."""
    pgid = proc.pid  # start_new_session made bash the leader of its own group
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        proc.poll()  # reap bash, so it does not count as alive
        if not _group_running(pgid):
            break
        time.sleep(0.02)
    else:
        _signal_group(pgid, signal.SIGKILL)
    proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_running(pgid: int) -> bool:
    """Whether a process of the group is still running.

    Zombies do not count: orphans go to PID 1, which in many containers never reaps them, so
    probing the group with signal 0 would wait out the whole grace period every time.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # a member changed its user id: it still exists
            return True
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_bytes().rsplit(b")", 1)[1].split()  # after "pid (comm)"
        except OSError:  # exited while we looked
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def _read(out: IO[bytes], limit: int) -> str:
    """The output, bounded; a huge file is read only at its head and tail."""
    size = out.seek(0, os.SEEK_END)
    budget = 4 * limit + 4  # bytes that surely hold `limit` UTF-8 characters
    out.seek(0)
    if size <= 2 * budget:
        return bound(out.read().decode(errors="replace"), limit)
    head = out.read(budget).decode(errors="replace")
    out.seek(-budget, os.SEEK_END)
    tail = out.read(budget).decode(errors="replace")
    # Bytes stand in for characters in the marker's count here; exact for ASCII output.
    return bound(head + tail, limit, skipped=size - 2 * budget)


def _status(returncode: int) -> str:
    try:
        killed_by = f" (killed by {signal.Signals(-returncode).name})" if returncode < 0 else ""
    except ValueError:  # a signal number Python has no name for
        killed_by = ""
    return f"Exit code: {returncode}{killed_by}"
