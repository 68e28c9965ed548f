"""Each long-running command stopped as a service manager stops it: started in a session of
its own, SIGTERM, SIGINT or SIGHUP sent to its process alone. It exits with 128 + the
signal's number; afterwards no process of its session is alive, its ports are free, and no run
is left started in the instance. SIGKILLed, it leaves nothing running either (its reapers),
and its next start on the same home and port succeeds and says what it found.
(`flashrsi offline-model`: tests/offline_model/test_cli.py.)"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import ClassVar
from unittest import mock

import dagster as dg
import pytest

from flashrsi_dagster.deployment.cli_driver import _fail_stopped_runs
from flashrsi_dagster.lifecycle import STOP_SIGNALS
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.owner import this_process
from flashrsi_dagster.orchestration.ready import ACTIVE
from tests.conftest import PATIENCE, free_port, port_is_free, session_processes, wait_until
from tests.deployment.celery_workers import _drop_queue, celery_home, environment, needs_broker
from tests.deployment.test_kill_resume import _args
from tests.postgres import fresh_database, needs_postgres

FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
SIGNALS = pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)


@pytest.fixture(autouse=True)
def _none_left_running():
    """A failed test leaves no command of its own running: SIGKILL of each, whose reapers end
    what it started."""
    yield
    while Command.started:
        command = Command.started.pop()
        if command.process.poll() is None:
            command.killed()


class Command:
    """`flashrsi <args>` in a session of its own, its output in `log`."""

    started: ClassVar[list[Command]] = []

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None):
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [FLASHRSI, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        Command.started.append(self)

    def wait_for(self, condition, what: str) -> None:
        wait_until(lambda: self.process.poll() is not None or condition(), what)
        assert self.process.poll() is None, self.log.read_text()[-3000:]

    def stopped_by(self, signum: int) -> None:
        """Send `signum` to the command's process alone; it ends with 128 + signum and leaves
        no process of its session."""
        self.process.send_signal(signum)
        try:
            code = self.process.wait(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            left = "\n".join(session_processes(self.process.pid))
            raise AssertionError(
                f"still running:\n{left}\n{self.log.read_text()[-3000:]}"
            ) from None
        assert code == 128 + signum, self.log.read_text()[-3000:]
        wait_until(lambda: not session_processes(self.process.pid), "its whole session gone")

    def killed(self) -> None:
        self.process.kill()
        self.process.wait()
        wait_until(lambda: not session_processes(self.process.pid), "what it started gone")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status == 200
    except OSError:
        return False


STARTED = [s for s in ACTIVE if s != dg.DagsterRunStatus.QUEUED] + [dg.DagsterRunStatus.CANCELING]
"""A run some process answers for (a queued one waits for whichever dequeues next)."""


def _started_runs(home: Path) -> list[str]:
    with mock.patch.dict(os.environ, {"DAGSTER_HOME": str(home / ".dagster")}):
        instance = dg.DagsterInstance.from_config(str(home / ".dagster"))  # its storage names it
    try:
        return [r.run_id for r in instance.get_runs(filters=dg.RunsFilter(statuses=STARTED))]
    finally:
        instance.dispose()


def _ui(home: Path, port: int, explorer: int, log: Path) -> Command:
    args = ["ui", "--home", str(home), "--port", str(port), "--explorer-port", str(explorer)]
    ui = Command(args, log)
    ui.wait_for(lambda: _answers(f"http://127.0.0.1:{port}/server_info"), "the Dagster UI")
    ui.wait_for(lambda: _answers(f"http://127.0.0.1:{explorer}/"), "the explorer")
    return ui


@pytest.mark.slow
@SIGNALS
def test_flashrsi_ui_stops_with_all_it_started(tmp_path, signum):
    home, port, explorer = tmp_path / ".flashrsi", free_port(), free_port()
    ui = _ui(home, port, explorer, tmp_path / "ui.log")
    ui.stopped_by(signum)
    assert port_is_free(port) and port_is_free(explorer)
    assert _started_runs(home) == []
    assert f"stopped by {signal.Signals(signum).name}" in ui.log.read_text()


@pytest.mark.slow
def test_a_killed_flashrsi_ui_leaves_nothing_and_starts_again_on_its_port(tmp_path):
    home, port, explorer = tmp_path / ".flashrsi", free_port(), free_port()
    _ui(home, port, explorer, tmp_path / "ui.log").killed()  # its reapers end the rest
    assert port_is_free(port) and port_is_free(explorer)
    again = _ui(home, port, explorer, tmp_path / "again.log")
    said = again.log.read_text()
    assert f"a previous `flashrsi ui` (port {port})" in said
    assert "ended without stopping: nothing of it was running" in said
    again.stopped_by(signal.SIGTERM)


@pytest.fixture
def worker_home(tmp_path):
    """A home whose steps go to Celery (RabbitMQ, PostgreSQL), and its environment."""
    home = tmp_path / "home"
    queue = celery_home(home)
    try:
        with fresh_database() as url:
            yield home, environment(url)
    finally:
        _drop_queue(queue)


WORKER = f"w1-{os.getpid()}@%h"
"""One name per test process: Celery workers of one name on one broker (two suites at once
on a machine) answer each other's remote control."""


def _worker(home: Path, env: dict[str, str], log: Path) -> Command:
    worker = Command(["worker", "--home", str(home), "--name", WORKER], log, env)
    worker.wait_for(lambda: " ready." in log.read_text(), "the Celery worker ready")
    return worker


@pytest.mark.slow
@needs_postgres
@needs_broker
@SIGNALS
def test_flashrsi_worker_stops_with_its_celery_worker(tmp_path, worker_home, signum):
    worker = _worker(*worker_home, tmp_path / "worker.log")
    worker.stopped_by(signum)
    assert "warm shutdown" in worker.log.read_text().lower()  # Celery's own orderly stop


@pytest.mark.slow
@needs_postgres
@needs_broker
def test_a_killed_flashrsi_worker_leaves_nothing_and_its_next_start_says_so(tmp_path, worker_home):
    _worker(*worker_home, tmp_path / "worker.log").killed()
    again = _worker(*worker_home, tmp_path / "again.log")
    said = again.log.read_text()
    assert f"a previous `flashrsi worker` ({WORKER})" in said
    assert "ended without stopping: nothing of it was running" in said
    again.stopped_by(signal.SIGTERM)


def _driving(args: list[str], home: Path, log: Path) -> Command:
    """`flashrsi <args>`, once a run of it has started."""
    driver = Command(args, log)
    driver.wait_for(lambda: "\n== " in log.read_text(), "its first step begun")
    driver.wait_for(lambda: _started_runs(home), "a run of it started")
    return driver


@pytest.mark.slow
@SIGNALS
def test_flashrsi_run_and_resume_stop_with_their_runs(tmp_path, signum):
    home = tmp_path / ".flashrsi"
    run = _driving(["run", *_args("meta_harness", home)], home, tmp_path / "run.log")
    run.stopped_by(signum)
    assert _started_runs(home) == []  # failed as it stopped, not left for the next driver
    (name,) = [p.name for p in home.iterdir() if not p.name.startswith(".")]
    resume = ["resume", "--experiment", name, "--home", str(home)]
    _driving(resume, home, tmp_path / "resume.log").stopped_by(signum)
    assert _started_runs(home) == []
    assert "resume to carry on" in (tmp_path / "resume.log").read_text()


def test_a_stopped_driver_whose_runs_sqlite_has_locked_says_so_and_leaves_them_to_the_next(
    tmp_path,
):
    """The stopping driver marks its runs failed while its interrupted run workers record
    their own end, holding SQLite's lock: it tries again, and where the lock outlasts its
    tries it says so and returns, so the command still exits as stopped; the next driver
    fails the run (this process gone by then)."""
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        run = dg.DagsterRun(
            job_name="meta_harness",
            status=dg.DagsterRunStatus.STARTED,
            tags={EXPERIMENT_TAG: "exp", **this_process()},
        )
        run_id = instance.add_run(run).run_id
        said: list[str] = []
        holder = sqlite3.connect(tmp_path / "history" / "runs.db", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # a run worker mid-write
        try:
            _fail_stopped_runs(instance, "exp", said.append)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        (line,) = said
        assert "not marked failed" in line and "database is locked" in line
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.STARTED

        _fail_stopped_runs(instance, "exp", said.append)
        assert said[1:] == [f"   run {run_id}, stopped with this driver, is marked failed"]
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
