"""Dagster's own code server (`dagster api grpc`), whose run workers start warm.

Dagster's server starts each run worker with `multiprocessing`'s `spawn`: a cold Python that
imports Dagster and the code location from scratch, about 5 s on this 2-core machine and
several times that on a loaded one, for every round of every experiment. Here the same server forks
its run workers from a `forkserver` that imported the code location once (`PRELOAD`): each
worker starts with the modules already loaded and only reconstructs the job. The fork server
starts with the server, so that it imports while the server waits for its first run.
Everything else is the server Dagster ships, with its command line (`command()`: `main()` run
with `dagster api grpc`'s options). `main()` is called by `python -c`, not run as a module
with `-m`: multiprocessing runs a main module again in every worker it starts, and this one,
imported already with the code location, would run twice there, with a RuntimeWarning each time.

A forkserver holds the code as it was when the server started, as the server itself does: a
changed framework needs the server (`flashrsi ui`, the driver) started again either way."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from multiprocessing import forkserver
from pathlib import Path

from flashrsi_dagster import scratch
from flashrsi_dagster.deployment.reaper import Group
from flashrsi_dagster.deployment.run_queue import STARTUP_TIMEOUT
from flashrsi_dagster.lifecycle import stop_all
from flashrsi_dagster.orchestration.dagster_internals import (
    DagsterApiServer,
    DagsterGrpcClient,
    dagster_cli,
    find_free_port,
    wait_for_grpc_server,
)

LOCATION = "flashrsi_dagster.definitions"
"""The code location, by module, also its name (as `dagster dev -m` names it)."""
HOME_ENV = "FLASHRSI_HOME"
"""The experiments folder of the code location (absolute), set by whatever starts a process
that loads it: `flashrsi ui`, `flashrsi run`'s code server, a run's container, a pod."""
PRELOAD = (LOCATION,)
"""What every run worker needs before it reconstructs its job: the code location."""


def warm_context(preload: Sequence[str] = PRELOAD) -> multiprocessing.context.BaseContext:
    """A `forkserver` context whose server process imported `preload` once. Its workers are
    forked from a single-threaded process, never from the gRPC server's threads."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return context


def _warm_servers() -> None:
    """Every `DagsterApiServer` made in this process hands its runs to `warm_context()`."""
    init = DagsterApiServer.__init__

    @functools.wraps(init)
    def warm_init(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self._mp_ctx = warm_context()
        # started now, it imports while the server waits for its first run, not during it
        forkserver.ensure_running()

    DagsterApiServer.__init__ = warm_init


def command(*options: str) -> list[str]:
    """The command that starts this server with `dagster api grpc`'s `options`."""
    return [sys.executable, "-c", f"from {__name__} import main; main()", *options]


class CodeServer:
    """This server for the code location of the experiments under `home`, started in the
    folder holding it, its process group dying with this process (`reaper.Group`): run
    workers at any stage, the fork server, their resource trackers."""

    def __init__(self, home: Path, env: Mapping[str, str] | None = None):
        self.home, self.env = Path(home).resolve(), dict(os.environ if env is None else env)
        self.env[HOME_ENV] = str(self.home)  # the code location's home, whatever its name
        self.port = 0
        self._group: Group | None = None

    def start(self) -> int:
        """Start it and wait until it answers; returns its port."""
        self.start_group()
        return self.wait_ready()

    def start_group(self) -> int:
        """Start it; returns the id of its process group."""
        self.port = find_free_port()
        self._group = Group(
            [*self._args(), "--log-level", "warning"],
            self.name,
            cwd=self.home.parent,
            env=self.env,
        )
        return self._group.leader.pid

    def wait_ready(self) -> int:
        """Wait until it answers; returns its port."""
        assert self._group is not None
        client = DagsterGrpcClient(port=self.port, host="localhost")
        wait_for_grpc_server(self._group.leader, client, self._args(), timeout=STARTUP_TIMEOUT)
        return self.port

    def _args(self) -> list[str]:
        args = command("--port", str(self.port), "--module-name", LOCATION)
        return [*args, "--working-directory", str(self.home.parent), "--location-name", LOCATION]

    def workspace(self) -> str:
        """A `workspace.yaml` pointing Dagster's webserver and daemon at this server."""
        return (
            f"load_from:\n  - grpc_server:\n      host: localhost\n      port: {self.port}\n"
            f"      location_name: {LOCATION}\n"
        )

    # as a child of a command (`lifecycle.Stoppable`): SIGINT to its group, so that the
    # server and each run worker stop in order (an interrupted run is marked failed)
    name = "code server"

    def stop(self) -> None:
        if self._group is not None:
            self._group.stop()

    def stopped(self) -> bool:
        return self._group is None or self._group.stopped()

    def kill(self) -> None:
        if self._group is not None:
            self._group.kill()
            self._group = None

    def close(self, drain: float = 0.0) -> None:
        """Stop it, and what it started, within `lifecycle.GRACE` (then killed): a caller
        giving up leaves the runs it still executes failed, to be run again. `drain`: seconds
        to let the runs it executes end first (the server's own shutdown waits for them): a
        driver whose experiment is done may be executing another driver's runs, which the
        shared queue launched here."""
        if drain and self._group is not None:
            with contextlib.suppress(Exception):  # gone already: nothing to wait for
                DagsterGrpcClient(port=self.port, host="localhost").shutdown_server(timeout=5)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._group.leader.wait(timeout=drain)
        stop_all([self])


def main(argv: Sequence[str] | None = None) -> None:
    scratch.short_socket_folder()  # before the fork server makes its socket
    _warm_servers()
    dagster_cli().main(
        args=["api", "grpc", *(sys.argv[1:] if argv is None else argv)], prog_name="dagster"
    )
