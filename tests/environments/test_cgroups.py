"""A jail's cgroups are named for the process space that made them: the sweep of groups whose
framework process died judges only its own space's pids, so two pid namespaces sharing one
cgroupfs (two simulated hosts, a container with the host's cgroupfs) never remove each
other's groups, an empty one just made included."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from flashrsi_dagster.environments.cgroups import JailGroup, _sweep
from flashrsi_dagster.scratch import process_space, start_time


def test_the_sweep_removes_the_dead_groups_of_this_process_space_only(tmp_path):
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # its pid names no process here now
    own = tmp_path / f"jail-{ended.pid}-0@{process_space()}"
    before = tmp_path / f"jail-{ended.pid}-1"  # as groups were named before
    elsewhere = tmp_path / f"jail-{ended.pid}-2@other-host.1"
    for folder in (own, before, elsewhere):
        folder.mkdir()

    _sweep(tmp_path)

    assert sorted(p.name for p in tmp_path.iterdir()) == [elsewhere.name]


def test_a_dead_framework_processs_jail_left_running_is_killed_by_the_next_sweep():
    """A jail's sandbox stranded by its bubblewrap's death (the framework SIGKILLed while the
    jail was being built: the sandbox's first process waits forever on its dead parent, seen
    left alive by a killed test run) is killed, and its groups removed, when the next jail is
    made on this machine."""
    dead, stranded = stranded_by_a_dead_owner()

    try:
        JailGroup.create(f"jail-{os.getpid()}-sweep-0").remove()
        stranded.wait(timeout=60)  # killed by that sweep, maybe still exiting as it ended
        JailGroup.create(f"jail-{os.getpid()}-sweep-1").remove()

        assert stranded.returncode == -signal.SIGKILL
        assert not any(folder.exists() for folder in dead.folders.values())
    finally:
        with contextlib.suppress(ProcessLookupError):
            stranded.kill()
        stranded.wait()
        dead.remove()


def stranded_by_a_dead_owner(
    reused_by: subprocess.Popen | None = None,
) -> tuple[JailGroup, subprocess.Popen]:
    """A jail's group whose framework process died once the jail's first process (`sleep`)
    had joined it. The owner, a stand-in, lives until then: a dead owner's group still
    empty is removed at once by any sweep, another test's jail's on the other worker.
    `reused_by`: a live process that holds the dead owner's pid now; the group, made in its
    name, is renamed once joined to claim an earlier start time (tick 1) than its own."""
    owner = reused_by or subprocess.Popen(["sleep", "3600"])
    started = start_time(owner.pid) if reused_by else None
    try:
        group = JailGroup.create(f"jail-{owner.pid}{f'.{started}' if started else ''}-0")
        if group is None:
            pytest.skip("no pids cgroup can be made here")
        stranded = subprocess.Popen(group.argv(["sleep", "3600"]), start_new_session=True)
        deadline = time.monotonic() + 60
        while not group.members.read_text().split() and time.monotonic() < deadline:
            time.sleep(0.05)  # until it has joined the group
        assert group.members.read_text().split(), "the process never joined its group"
    finally:
        if not reused_by:
            owner.kill()
            owner.wait()  # its pid names no process here now
    if reused_by:
        group = _renamed(group, group.name.replace(f".{started}-", ".1-", 1))
    return group, stranded


def _renamed(group: JailGroup, name: str) -> JailGroup:
    """`group` under `name`: each of its folders renamed (a cgroup folder may be, with its
    processes in it)."""
    folders = set(group.folders.values())
    moved = {folder: folder.rename(folder.with_name(name)) for folder in folders}
    return JailGroup(name, {kind: moved[folder] for kind, folder in group.folders.items()})
