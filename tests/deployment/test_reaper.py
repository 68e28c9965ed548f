"""What a driver starts dies with it, even on SIGKILL and whatever its stage: its code server
and a run worker that has not finished starting (which cannot yet have asked the kernel to
end it with its parent), with multiprocessing's resource tracker."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashrsi_dagster.deployment.reaper import Group

DRIVER = """
import sys, time
from pathlib import Path
import dagster as dg
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.deployment.instance import persistent_instance
from flashrsi_dagster.deployment.queued import QueuedRuns

home = Path(sys.argv[1])
instance = persistent_instance(home)
defs = defs_for("meta_harness")
instance.add_dynamic_partitions(defs.partitions.experiments.name, ["exp"])
queued = QueuedRuns(instance, home, build_definitions(str(home)))
request = dg.RunRequest(
    job_name=defs.finalize_job.name, partition_key="exp", tags={EXPERIMENT_TAG: "exp"}
)
print(queued.submit(request), flush=True)
time.sleep(3600)
"""
"""A driver's part that launches runs: its code server, and a run submitted to the home's
queue, which its dequeue loop launches into a run worker of the code server."""

STALLED = """
import os, sys, time
with open("/proc/self/cmdline", "rb") as cmdline:
    forkserver = b"multiprocessing.forkserver" in cmdline.read()
if forkserver or "--multiprocessing-fork" in sys.argv:  # run workers' start
    with open(os.path.join(os.environ["STALLED_IN"], str(os.getpid())), "w"):
        pass
    time.sleep(3600)
"""
"""A `sitecustomize` that holds what starts run workers before it has imported anything: the
code server's fork server (`deployment/code_server.py`), or a worker Dagster's own server
spawned; one still starting (on a loaded machine, importing Dagster takes tens of seconds)."""


def _session(session: int, field: int = 3) -> list[str]:
    """The processes of `session` (zombies aside), with their command lines; `field` 2: of a
    process group."""
    left = []
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[field]) == session:
            left.append(f"{proc.name}: {argv}")
    return left


def _group(group: int) -> list[str]:
    return _session(group, field=2)


def _until(condition, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return value


@pytest.mark.slow
def test_a_killed_driver_leaves_no_code_server_and_no_starting_run_worker(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(STALLED)
    (stalled := tmp_path / "stalled").mkdir()
    pythonpath = os.pathsep.join(
        p for p in [str(tmp_path / "site"), os.environ.get("PYTHONPATH")] if p
    )
    env = {**os.environ, "PYTHONPATH": pythonpath, "STALLED_IN": str(stalled)}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path / "home")],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip(), "the driver did not submit its run"
        workers = _until(lambda: list(stalled.iterdir()), seconds=600)
        assert workers, "no run worker was spawned"
        running = {int(line.split(":")[0]) for line in _session(driver.pid)}
        assert int(workers[0].name) in running
    finally:
        os.kill(driver.pid, signal.SIGKILL)  # the process alone, not its group
        driver.wait()
        driver.stdout.close()

    gone = _until(lambda: not _session(driver.pid))
    left = _session(driver.pid)
    for line in left:  # not left to sleep on after a failure
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert gone, f"alive after the kill: {left}"


SLEEPER = (
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
    "'import time; time.sleep(3600)']); time.sleep(3600)"
)
"""A leader that starts a child of its own."""
OWNER = f"""
import sys, time
from flashrsi_dagster.deployment.reaper import Group
group = Group([sys.executable, "-c", {SLEEPER!r}])
print(group.leader.pid, flush=True)
time.sleep(3600)
"""


def test_a_group_outlives_its_owner_by_no_process():
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert owner.stdout is not None
        leader = int(owner.stdout.readline())
        assert len(_until(lambda: len(_group(leader)) == 3 and _group(leader))) == 3
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        owner.stdout.close()

    gone = _until(lambda: not _group(leader))
    left = _group(leader)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert gone, f"alive after the kill: {left}"


def test_a_group_lives_while_its_owner_does_and_ends_when_it_kills_it():
    """The leader, its child and the reaper, until the owner (the driver, closing) ends them."""
    group = Group([sys.executable, "-c", SLEEPER])
    try:
        members = _until(lambda: len(_group(group.leader.pid)) == 3 and _group(group.leader.pid))
        assert members and any(str(group.reaper.pid) == m.split(":")[0] for m in members)
    finally:
        group.kill()

    assert group.leader.returncode == -signal.SIGKILL
    assert _until(lambda: not _group(group.leader.pid)), _group(group.leader.pid)
