"""Sabotage, ninth red-team pass: the machine's shared resources from inside a jail — memory
and disk — taken by a jailed agent (a process that joined the run's jail, as the jail user,
under the seccomp filter), through the real jail and the real cgroups.

Each attack that succeeded on main was written here first, failing; a limit the framework
declares rather than enforces is a strict xfail naming the documented limit.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from flashrsi_dagster.environments import cgroups
from tests.conftest import needs_jails
from tests.environments.local_chroot.conftest import needs_local_env
from tests.sabotage.test_bridge_and_jail_edges import (
    PYTHON,
    REPORT,
    inside,
    jailed_run,
    reported,
    rewritten,
    run_target,
)

pytestmark = needs_jails

HOG = """
    import sys
    held = []
    for _ in range(8):
        held.append(b"x" * (32 << 20))  # written, so every page is the process's own
    print("held", sum(map(len, held)) >> 20, "MiB")
"""
"""256 MiB, page by page: what a harness does to take the memory the framework, its gateway
and the other runs on the machine live in."""


def test_a_jail_cannot_take_the_machine_s_memory(tmp_path: Path, monkeypatch):
    """Attack: the jailed run allocates and touches memory until the machine has none left
    (nothing held a jail's memory: 512 processes may each take what they like, and the
    kernel's OOM killer then picks among every process of the machine). Stops it: a memory
    cgroup per jail (`cgroups.MAX_MEMORY_BYTES`), which every process that joins the jail
    enters; past it the kernel reclaims or kills inside the jail only. Shown with the limit
    lowered to 64 MiB, so the attack stays cheap."""
    monkeypatch.setattr(cgroups, "MAX_MEMORY_BYTES", 64 << 20)
    with jailed_run(tmp_path) as (run, work):
        out = inside(run, work, HOG)

    assert "held 256 MiB" not in out, "a jailed process held 256 MiB past a 64 MiB limit"


def test_every_jail_has_a_memory_limit_by_default(tmp_path: Path):
    """The default (no test's lowering): a process that joined a jail sits in a memory
    group of its own jail, whose limit the kernel holds at `MAX_MEMORY_BYTES`."""
    with jailed_run(tmp_path) as (run, work):
        groups = inside(run, work, "print(open('/proc/self/cgroup').read())")
        limit = run.jail.group.memory_limit() if run.jail.group else None

    assert run.jail.group is not None and f"/flashrsi/{run.jail.group.name}" in groups
    assert limit == cgroups.MAX_MEMORY_BYTES


def test_a_miniagent_run_forked_from_the_warm_server_is_held_too(tmp_path: Path, monkeypatch):
    """The same attack from a Worker's edit of MiniAgent's runtime: the run forks from the
    warm server and joins the jail there (another way in than `joining.py`), and is held by
    the same limit."""
    monkeypatch.setattr(cgroups, "MAX_MEMORY_BYTES", 64 << 20)
    attack = "\n\ndef _attack(params):\n    import subprocess, sys, textwrap\n"
    attack += "    code = textwrap.dedent(" + repr(HOG) + ")\n"
    attack += "    run = subprocess.run([sys.executable, '-c', code], capture_output=True)\n"
    attack += "    return (run.stdout + run.stderr[-200:]).decode()\n"
    harness = rewritten(tmp_path, attack, REPORT.format(label="hog"))

    out = reported(run_target(tmp_path, harness), "hog")

    assert "held 256 MiB" not in out, "a MiniAgent run held 256 MiB past a 64 MiB limit"


def _group_of(controller: str, proc_cgroup: str) -> str:
    """The group a process is in for `controller`, read off `/proc/self/cgroup` (cgroup v1's
    line naming the controller, else v2's one line)."""
    paths = dict(line.split(":", 2)[1:] for line in proc_cgroup.splitlines() if line)
    named = [path for names, path in paths.items() if controller in names.split(",")]
    return named[0] if named else paths[""]


def test_a_jail_s_processes_share_one_part_of_the_cpu(tmp_path: Path):
    """Attack: the run spins hundreds of busy processes. The scheduler shares the CPU per
    process, so the run took hundreds of parts against one for each of its sibling
    candidates' runs (whose rollouts then slow to their timeouts) and for the framework's
    own threads (the gateway, the watchdog). Stops it: each jail's processes sit in a cpu
    group of their own, at the default weight, so the CPU is shared between jails. Checked
    as the kernel holds it, not timed: a joined process's cpu group is its jail's."""
    with jailed_run(tmp_path) as (run, work):
        groups = inside(run, work, "print(open('/proc/self/cgroup').read())")
        name = run.jail.group.name if run.jail.group else None

    assert _group_of("cpu", groups.split("-- stderr")[0]).endswith(f"/flashrsi/{name}")


@pytest.mark.xfail(
    strict=True,
    reason="declared limit (docs/confinement.md, 'Limits per jail'): what a run writes to its "
    "own folders on the host's disk is bounded per file (1 GiB) and by its timeout, not in total",
)
def test_a_jail_s_run_folder_is_bounded_in_total(tmp_path: Path):
    """Attack: the jailed run fills its own folder, file after file under the 1 GiB per file,
    until the host's disk (the records, the snapshot store, every other run's) is full.
    Checked, not filled: the file system the run's folder is on, as the kernel reports it
    inside the jail, is the host's own (the same size), so nothing holds the total."""
    with jailed_run(tmp_path) as (run, work):
        out = inside(run, work, "import os; s = os.statvfs('.'); print(s.f_blocks * s.f_frsize)")
    host = os.statvfs(tmp_path)

    assert int(out.split()[0]) != host.f_blocks * host.f_frsize


@needs_local_env
def test_a_local_trial_s_commands_are_held_as_a_jail_s(tmp_path: Path):
    """Attack: a Terminal-Bench agent runs inside the trial's environment, as root of its
    chroot: with the local environment its commands had no process, memory or CPU bound (a
    fork bomb there took every pid of the machine). Stops it: the trial's container, every
    command entered into it and the verifier beside it sit in the trial's own cgroups, the
    same bounds as a jail's. Checked as the kernel holds it: a command's groups."""
    from tests.environments.local_chroot.test_environment import make_env, running

    env = make_env(tmp_path)

    async def scenario() -> str:
        async with running(env):
            return (await env.exec("cat /proc/self/cgroup")).stdout

    groups = asyncio.run(scenario())

    for controller in ("pids", "memory", "cpu"):
        assert "/flashrsi/jail-" in _group_of(controller, groups), (controller, groups)


HOLD_INOTIFY = """
    import ctypes, sys
    libc = ctypes.CDLL(None, use_errno=True)
    held = 0
    while held < 16384 and libc.inotify_init1(0) >= 0:
        held += 1
    print(held, flush=True)
    sys.stdin.read()  # held until the test lets go
"""


@pytest.mark.xfail(
    strict=True,
    reason="declared limit (docs/confinement.md, 'Limits per jail'): every jail runs as the "
    "same user, so the kernel's per-user counts (inotify instances and watches, pending "
    "signals) are shared between the jails of one machine",
)
def test_one_jail_cannot_take_a_per_user_kernel_count_from_another(tmp_path: Path):
    """Attack: a run takes every inotify instance its user may have (128 by default), so a
    sibling candidate's run, in another jail but the same user, gets none (a CLI that
    watches its files fails there)."""
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    if limit > 16384:
        pytest.skip(f"max_user_instances is {limit}: more than one process holds here")
    probe = "import ctypes; print(ctypes.CDLL(None).inotify_init1(0) >= 0)"
    with jailed_run(tmp_path / "a") as (run, work), jailed_run(tmp_path / "b") as (other, place):
        code = textwrap.dedent(HOLD_INOTIFY)
        argv = run.jail.enter_argv([PYTHON, "-I", "-c", code], run.env, work)
        holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and int(holder.stdout.readline()) > 0
            answer = inside(other, place, probe)
        finally:
            holder.kill()
            holder.wait()

    assert answer.split()[0] == "True", "another jail took every inotify instance of the user"
