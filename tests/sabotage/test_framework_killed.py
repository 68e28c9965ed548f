"""Sabotage that outlives the framework: an agent sleeping in a tool call when the framework
process is killed with SIGKILL (no `finally`, no `atexit`, nothing of ours runs).

Every process the framework started for its agents (the fork server, each jail's bubblewrap
and everything in the jail) must be gone two seconds later: the jails die with their parent
(`--die-with-parent`), and the fork server with its standard input.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import needs_jails, wait_until
from tests.sabotage.helpers import EXAMPLE, alive, sleep_args

pytestmark = needs_jails

# Temporary folders a run lends its jail (see MiniAgent, Meta-Harness, the benchmark).
RUN_FOLDERS = ("miniagent-run-", "flashrsi-edit-", "flashrsi-target-", "flashrsi-task-")
DRIVER = textwrap.dedent(
    """
    import sys
    from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
    from flashrsi_dagster.config import load_config
    from flashrsi_dagster.experiment import open_experiment
    from flashrsi_dagster.llm.endpoints import offline_server

    example, home, role, sleep = sys.argv[1:5]
    call = {"tool_calls": [{"name": "shell", "arguments": {"command": f"sleep {sleep}"}}]}
    model = offline_server().add_script("sleepy", [call, {"text": "done"}] * 4)
    overrides = ["--experiment.home", home, "--benchmark.limit", "1"]
    sleeper = "--agent.llm.model" if role == "target" else "--algorithm.worker.llm.model"
    overrides += [sleeper, model]
    MetaHarness(open_experiment(load_config(example, overrides)), log=print).run()
    """
)


@pytest.mark.parametrize("role", ["worker", "target"])
def test_no_agent_process_survives_a_sigkilled_framework(tmp_path: Path, role: str):
    """Attack: the framework dies while an agent sleeps in a tool call (`sleep 9xx`).
    What stops the agent outliving it: bubblewrap's `--die-with-parent` kills each jail
    (and the kernel every process of its PID namespace); the fork server exits when its
    standard input closes."""
    (sleep,) = sleep_args(1)
    framework = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(EXAMPLE), str(tmp_path / "home"), role, sleep],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: alive(f"sleep {sleep}"), "the agent started its sleep")
        started = _descendants(framework.pid)
        framework.send_signal(signal.SIGKILL)
        framework.wait()
        # The kernel's kills are immediate; the bound lets a loaded machine run the exits (a
        # process left alive for good, as a `sleep 9xx` would be, still fails).
        deadline = time.monotonic() + 60
        while _descendants_alive(started) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        framework.kill()
        _remove_run_folders(started)  # the dead framework could not (not what is tested here)

    kinds = " ".join(started.values())
    assert "--fork-server" in kinds and "bwrap" in kinds and f"sleep {sleep}" in kinds
    assert _descendants_alive(started) == {}
    assert alive(f"sleep {sleep}") == []


def _remove_run_folders(started: dict[tuple[int, str], str]) -> None:
    """The temporary folders the killed framework lent its jails (named in bwrap's mounts)."""
    tmp = Path(tempfile.gettempdir())
    for argv in started.values():
        if not argv.startswith("bwrap "):
            continue
        for word in argv.split():
            path = Path(word)
            parts = path.relative_to(tmp).parts if path.is_relative_to(tmp) else ()
            if len(parts) >= 2 and parts[0] == "flashrsi-history":  # one experiment's view
                shutil.rmtree(tmp / parts[0] / parts[1], ignore_errors=True)
            elif parts and parts[0].startswith(RUN_FOLDERS):
                shutil.rmtree(tmp / parts[0], ignore_errors=True)


def _descendants(root: int) -> dict[tuple[int, str], str]:
    """(pid, start time) -> command line of every live process below `root`."""
    table = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and (fields := _stat(proc)) is not None:
            table[int(proc.name)] = fields
    out, todo = {}, [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, start, _) in table.items():
            if ppid == parent:
                out[(pid, start)] = _cmdline(pid)
                todo.append(pid)
    return out


def _descendants_alive(started: dict[tuple[int, str], str]) -> dict[int, str]:
    """Those of `started` still running (same pid and start time, not a zombie)."""
    survivors = {}
    for (pid, start), argv in started.items():
        fields = _stat(Path(f"/proc/{pid}"))
        if fields is not None and fields[1] == start and fields[2] != "Z":
            survivors[pid] = argv
    return survivors


def _stat(proc: Path) -> tuple[int, str, str] | None:
    """(parent pid, start time, state) of a process, None once it is gone."""
    try:
        fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[19], fields[0]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
