"""A child process whose whole tree dies with this process, even on SIGKILL, at once.

The kernel's parent-death signal (`owner.die_with_parent`) covers one process: it is not
inherited across fork or spawn, so a code server's run worker can set it only once it has
imported Dagster (tens of seconds on a loaded machine, during which a killed driver's worker
lived on), and multiprocessing's resource tracker never does. Here the child leads a process
group of its own, which what it starts joins as it is forked (the gRPC code server's run
workers, at any stage, their step processes, the resource trackers: Dagster puts none in a
session of its own), and a reaper, a few lines of Python started with `-I -S` (milliseconds),
waits beside it for this process to end and then SIGKILLs the group (its resource trackers
last, so that they unlink the semaphores of the killed). The reaper is a member
of the group: while it lives or is unreaped the group's id cannot be reused, so the kill never
reaches a stranger. A process that starts a session of its own (an agent's jail) leaves the
group: its own teardown answers for it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from flashrsi_dagster.lifecycle import STOP_SIGNALS
from flashrsi_dagster.orchestration.owner import die_with_parent

REAPER = """
import os, select, signal, sys, time
driver = int(sys.argv[1])
try:
    watched = [os.pidfd_open(driver)]  # readable once the driver has ended
except OSError:  # no pidfd (a kernel before 5.3, a seccomp filter): look twice a second
    watched = []
# stdin: the driver's pipe, at its end once the driver ends or closes it
while os.getppid() == driver and not select.select([0, *watched], [], [], 0.5)[0]:
    pass
group, me = os.getpgrp(), os.getpid()

def members():
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                tracker = b"resource_tracker" in cmdline.read()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != b"Z" and int(name) != me:
            found[int(name)] = tracker
    return found

for pid, tracker in members().items():
    if not tracker:  # a tracker ends on its own once they have, its semaphores unlinked
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
until = time.monotonic() + 1
while members() and time.monotonic() < until:
    time.sleep(0.02)
os.killpg(group, signal.SIGKILL)
"""
"""Run as `python -I -S -c REAPER <driver pid>` in the group, stdin a pipe the driver holds:
waits for the driver to end or close the pipe, kills the group but its resource trackers,
gives them a second to unlink what the dead left (else `/dev/shm` keeps it), then kills the
group, itself too."""


class Group:
    """`args` started as the leader of a process group of its own (dying with this process by
    the parent-death signal too), and the reaper that kills the group when this process ends.
    A child of a command (`lifecycle.Stoppable`): `stop` sends `stop_signal` to the leader, or
    to the whole group (`to_group`: each of Dagster's processes stops its own work)."""

    def __init__(
        self,
        args: list[str],
        name: str = "",
        stop_signal: int = signal.SIGINT,
        to_group: bool = True,
        **popen,
    ) -> None:
        self.name, self.stop_signal, self.to_group = name or args[0], stop_signal, to_group
        self.leader = subprocess.Popen(args, process_group=0, preexec_fn=_leader, **popen)
        read, self._pipe = os.pipe()
        try:
            # joins the leader's group: the leader, even ended, is a zombie until reaped
            self.reaper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", REAPER, str(os.getpid())],
                stdin=read,
                process_group=self.leader.pid,
                preexec_fn=_ignore_stop_signals,  # they reach the group, the reaper stays
            )
        except BaseException:
            os.close(self._pipe)
            self.leader.kill()
            self.leader.wait()
            raise
        finally:
            os.close(read)

    def stop(self) -> None:
        """Send the stop signal; returns at once (`stopped` says when the leader has ended)."""
        with contextlib.suppress(ProcessLookupError):
            if self.to_group:
                os.killpg(self.leader.pid, self.stop_signal)
            else:
                self.leader.send_signal(self.stop_signal)

    def stopped(self) -> bool:
        return self.leader.poll() is not None

    def kill(self) -> None:
        """End every process left in the group, as when this process ends (the leader's
        orderly shutdown is the caller's), and reap the leader and the reaper."""
        if self._pipe < 0:
            return
        os.close(self._pipe)
        self._pipe = -1
        try:
            self.reaper.wait(timeout=30)
        except subprocess.TimeoutExpired:  # the pipe leaked into a fork of this process
            os.killpg(self.leader.pid, signal.SIGKILL)
            self.reaper.wait()
        self.leader.wait()


def _leader() -> None:
    """In the leader before it runs: it dies with this process, and stops on each stop signal
    even where this process was started with them ignored (children inherit that)."""
    die_with_parent()
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def _ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
