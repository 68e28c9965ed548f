"""A jail's cgroups are named for the process space that made them: the sweep of groups whose
framework process died judges only its own space's pids, so two pid namespaces sharing one
cgroupfs (two simulated hosts, a container with the host's cgroupfs) never remove each
other's groups, an empty one just made included."""

from __future__ import annotations

import subprocess
import sys

from flashrsi_dagster.environments.cgroups import _sweep
from flashrsi_dagster.scratch import process_space


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
