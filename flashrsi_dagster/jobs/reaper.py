"""A child process whose whole tree dies with this process, even on SIGKILL, at once.

The kernel's parent-death signal (`owner.die_with_parent`) covers one process: it is not
inherited across fork or spawn, so a code server's run worker can set it only once it has
imported Dagster (tens of seconds on a loaded machine, during which a killed driver's worker
lived on), and multiprocessing's resource tracker never does. Here the child leads a process
group of its own, which what it starts joins as it is forked (the gRPC code server's run
workers, at any stage, their step processes, the resource trackers: Dagster puts none in a
session of its own), and a reaper, a few lines of Python started with `-I -S` (milliseconds),
waits beside it for this process to end and then SIGKILLs the group. The reaper is a member
of the group: while it lives or is unreaped the group's id cannot be reused, so the kill never
reaches a stranger. A process that starts a session of its own (an agent's jail) leaves the
group: its own teardown answers for it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from flashrsi_dagster.jobs.owner import die_with_parent

REAPER = """
import os, select, signal, sys, time
driver = int(sys.argv[1])
try:
    watch = os.pidfd_open(driver)
except OSError:  # no pidfd (a kernel before 5.3, a seccomp filter): look twice a second
    watch = None
if watch is not None and os.getppid() == driver:  # still ours: the pidfd names the driver
    select.select([watch], [], [])  # readable once the driver has ended
else:
    while os.getppid() == driver:  # reparented once the driver has ended
        time.sleep(0.5)
os.killpg(os.getpgrp(), signal.SIGKILL)
"""
"""Run as `python -I -S -c REAPER <driver pid>`, in the group: waits for the driver to end (its
pidfd readable, or, without one, this process reparented), then kills the group, itself too."""


class Group:
    """`args` started as the leader of a process group of its own (dying with this process by
    the parent-death signal too), and the reaper that kills the group when this process ends."""

    def __init__(self, args: list[str], **popen) -> None:
        self.leader = subprocess.Popen(args, process_group=0, preexec_fn=die_with_parent, **popen)
        try:
            # joins the leader's group: the leader, even ended, is a zombie until reaped
            self.reaper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", REAPER, str(os.getpid())],
                stdin=subprocess.DEVNULL,
                process_group=self.leader.pid,
            )
        except BaseException:
            self.leader.kill()
            self.leader.wait()
            raise

    def kill(self) -> None:
        """SIGKILL every process left in the group (the leader's orderly shutdown is the
        caller's), and reap the leader and the reaper."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.leader.pid, signal.SIGKILL)
        self.leader.wait()
        self.reaper.wait()
