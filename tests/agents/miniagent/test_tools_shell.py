"""shell: one bash command in the task folder; services survive, timeouts and cancels do not."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agents.conftest import timed_out_while_running
from tests.agents.miniagent.conftest import assert_group_gone, live_members
from tests.conftest import PATIENCE, free_port, wait_until

STARTED = "sleep 100 & touch started; sleep 100"
"""A command's tail that creates `started` once its background child is running."""

MARKER = re.compile(r"\[\.\.\. (\d+) characters truncated \.\.\.\]")


@pytest.fixture
def shell(harness):
    return harness.tools.build_tools(["shell"])["shell"]


def test_returns_exit_code_and_combined_output(shell, ctx):
    result = shell.run({"command": "echo out; echo err >&2; exit 3"}, ctx)

    assert result.splitlines() == ["Exit code: 3", "out", "err"]


def test_runs_in_the_working_dir_with_empty_stdin(shell, ctx):
    result = shell.run({"command": "pwd; cat; echo made > made.txt"}, ctx)

    assert result.splitlines() == ["Exit code: 0", str(ctx.working_dir)]
    assert (ctx.working_dir / "made.txt").read_text() == "made\n"


def test_no_output_is_said_plainly(shell, ctx):
    assert shell.run({"command": "true"}, ctx) == "Exit code: 0\n(no output)"


@pytest.mark.parametrize("lines", [10_000, 2_000_000], ids=["in-memory", "read-at-ends"])
def test_output_is_bounded_keeping_head_and_tail(shell, ctx, lines):
    ctx.output_limit = 200

    result = shell.run({"command": f"seq 1 {lines}"}, ctx)

    output = result.removeprefix("Exit code: 0\n")
    assert len(output) <= 200
    assert output.startswith("1\n2\n3\n")
    assert output.endswith(f"{lines - 1}\n{lines}\n")
    assert MARKER.search(output)


def test_a_background_process_holding_the_output_does_not_block(shell, ctx):
    ctx.shell_timeout = 60  # blocked on the output, the call would end in this timeout
    result = shell.run({"command": "sleep 600 & echo $!"}, ctx)
    pid = int(result.splitlines()[1])
    try:
        assert result.startswith("Exit code: 0\n")
        assert pid in live_members(os.getpgid(pid))
    finally:
        os.killpg(os.getpgid(pid), signal.SIGKILL)


def test_a_background_service_keeps_serving_later_commands(shell, ctx):
    port = free_port()
    command = f"{sys.executable} -m http.server {port} --bind 127.0.0.1 > server.log 2>&1 & echo $!"
    pid = int(shell.run({"command": command}, ctx).splitlines()[1])
    try:
        assert _get(f"http://127.0.0.1:{port}/") == 200
        assert shell.run({"command": f"kill -0 {pid} && echo alive"}, ctx).endswith("alive\n")
    finally:
        os.killpg(os.getpgid(pid), signal.SIGKILL)


@pytest.mark.parametrize("prefix", ["", "trap '' TERM; "], ids=["sigterm", "sigkill"])
def test_a_timeout_leaves_no_process_of_the_command_behind(shell, ctx, prefix):
    command = f"{prefix}echo $$; sleep 100 & touch started; sleep 100"

    def run(timeout: float, attempt: int) -> str:
        return shell.run({"command": command, "timeout": timeout}, ctx)

    result, timeout = timed_out_while_running(run, ctx.working_dir / "started", first=0.5)

    assert result.startswith(f"Error: command timed out after {timeout:g} s\nPartial output:\n")
    assert_group_gone(int(result.splitlines()[-1]))


def test_the_timeout_argument_is_capped_by_the_context(shell, ctx):
    ctx.shell_timeout = 0.3

    result = shell.run({"command": "sleep 100", "timeout": 100}, ctx)

    assert result.startswith("Error: command timed out after 0.3 s")


def test_setting_cancel_kills_the_group_and_raises_cancelled(shell, ctx, harness):
    once_started(ctx.working_dir, ctx.cancel.set)

    with pytest.raises(harness.context.Cancelled):
        shell.run({"command": f"echo $$ > pgid; {STARTED}"}, ctx)

    assert_group_gone(int((ctx.working_dir / "pgid").read_text()))


def test_an_exception_from_a_signal_handler_kills_the_group_and_propagates(shell, ctx):
    class Interrupted(Exception):
        pass

    def handler(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        with pytest.raises(Interrupted):
            once_started(ctx.working_dir, os.kill, os.getpid(), signal.SIGUSR1)
            shell.run({"command": f"echo $$ > pgid; {STARTED}"}, ctx)
    finally:
        signal.signal(signal.SIGUSR1, previous)

    assert_group_gone(int((ctx.working_dir / "pgid").read_text()))


def test_a_cancelled_context_runs_nothing(shell, ctx, harness):
    ctx.cancel.set()

    with pytest.raises(harness.context.Cancelled):
        shell.run({"command": "touch ran"}, ctx)

    assert not (ctx.working_dir / "ran").exists()


@pytest.mark.parametrize(
    "arguments",
    [{}, {"command": ""}, {"command": 5}, {"command": "true", "timeout": -1}, {"command": "a\0"}],
)
def test_bad_arguments_are_errors_for_the_model(shell, ctx, arguments):
    assert shell.run(arguments, ctx).startswith("Error: ")


def test_a_missing_working_dir_is_an_error_for_the_model(shell, ctx):
    ctx.working_dir = ctx.working_dir / "missing"

    assert shell.run({"command": "true"}, ctx).startswith("Error: ")


def once_started(working_dir: Path, action: Callable[..., object], *arguments: object) -> None:
    """Call `action(*arguments)` from a thread once the command has started (`STARTED`)."""

    def wait_then_act() -> None:
        wait_until((working_dir / "started").exists, "the command started")
        action(*arguments)

    threading.Thread(target=wait_then_act, daemon=True).start()


def _get(url: str) -> int:
    deadline = time.monotonic() + PATIENCE  # a loaded machine takes its time to start Python
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return response.status
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
