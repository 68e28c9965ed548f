"""How a long-running command stops: each stop signal ends it with 128 + its number; what it
started is asked to stop, and killed (its whole group) when the grace ends; its next start
ends what a command killed with SIGKILL left, and refuses while one of its kind holds the key."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster import scratch
from flashrsi_dagster.deployment.reaper import Group
from flashrsi_dagster.lifecycle import (
    STOP_SIGNALS,
    CommandRunning,
    Record,
    Stopped,
    raise_if_stopped,
    raise_on_stop_signals,
    release_interrupted,
    restore,
    stop_all,
    stop_received,
    stop_wins,
)
from tests.conftest import PATIENCE

STUBBORN = """
import signal, subprocess, sys, time
for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(stop, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("ready", flush=True)
time.sleep(600)
"""
"""A child that ignores every stop signal and has a child of its own."""
OBEDIENT = "import time; print('ready', flush=True); time.sleep(600)"


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_each_stop_signal_raises_stopped_with_128_plus_its_number(signum):
    handlers = raise_on_stop_signals()
    try:
        with pytest.raises(Stopped) as stopped:
            os.kill(os.getpid(), signum)
            signal.sigtimedwait([], 0)  # let the handler run
    finally:
        restore(handlers)
    assert stopped.value.status == 128 + signum
    assert isinstance(stopped.value, KeyboardInterrupt)  # what cleans up on Ctrl-C does here


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("dagster_handler", ["captures", "raises"])
def test_a_stop_signal_another_handler_took_is_still_the_command_s_stop(signum, dagster_handler):
    """While a run executes in process, Dagster replaces the SIGINT and SIGTERM handlers with
    its own, which note the signal or raise its interruption and fail the run; the command's
    handler never runs. The command still learns of the stop, and ends at its next check."""
    from dagster._core.errors import DagsterExecutionInterruptedError
    from dagster._utils.interrupts import capture_interrupts, raise_interrupts_as

    handlers = raise_on_stop_signals()
    try:
        with capture_interrupts():
            try:
                with raise_interrupts_as(DagsterExecutionInterruptedError):
                    if dagster_handler == "raises":
                        os.kill(os.getpid(), signum)
                        signal.sigtimedwait([], 0)
                if dagster_handler == "captures":
                    os.kill(os.getpid(), signum)
                    signal.sigtimedwait([], 0)
            except DagsterExecutionInterruptedError:
                pass  # the run fails with it
        assert stop_received() == signum
        with pytest.raises(Stopped) as stopped:
            raise_if_stopped()
        assert stopped.value.status == 128 + signum
    finally:
        restore(handlers)
    handlers = raise_on_stop_signals()  # the next command's life starts clean
    try:
        assert stop_received() is None
        raise_if_stopped()
    finally:
        restore(handlers)


@contextlib.contextmanager
def _transaction(database: Path):
    """As Dagster's SQLite storages write: a transaction opened in a generator."""
    connection = sqlite3.connect(database, timeout=0.1)
    try:
        with connection:  # commits, or rolls back on an error
            yield connection
    finally:
        connection.close()


def _write_cut_short_by_a_stop(database: Path) -> None:
    writing = _transaction(database)
    writing.__enter__().execute("INSERT INTO runs VALUES ('started')")
    raise Stopped(signal.SIGTERM)  # landed as `__exit__` began: the generator never resumed


def test_a_transaction_a_stop_cut_short_is_let_go_so_the_stopped_runs_can_be_failed(tmp_path):
    """A stop can land where a `with` block's exit has begun but not yet resumed the
    generator holding a database transaction: the write lock stays held by a suspended
    generator that only the interrupted frames refer to, and marking the stopped runs failed
    would find the database locked. Letting go of those frames ends the transaction."""
    database = tmp_path / "runs.db"
    with sqlite3.connect(database) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
        setup.execute("CREATE TABLE runs (status TEXT)")
    try:
        _write_cut_short_by_a_stop(database)
    except Stopped as stop:  # while the stop is handled, as a driver's last writes are
        with pytest.raises(sqlite3.OperationalError, match="locked"), _transaction(database) as c:
            c.execute("UPDATE runs SET status = 'failed'")
        release_interrupted(stop)
        with _transaction(database) as failing:
            failing.execute("INSERT INTO runs VALUES ('failed')")
    with sqlite3.connect(database) as reading:
        assert reading.execute("SELECT status FROM runs").fetchall() == [("failed",)]


def test_an_error_after_a_swallowed_stop_signal_is_reported_as_the_stop():
    """Code the stop interrupted may swallow `Stopped` (Dagster's in-process execution fails
    its run instead) and the command then meets that failure: it is the stop's doing, and the
    command exits as stopped (143 for SIGTERM), not as failed."""
    handlers = raise_on_stop_signals()
    try:
        assert stop_received() is None
        with pytest.raises(Stopped) as stopped, stop_wins():
            try:  # the interrupted run
                os.kill(os.getpid(), signal.SIGTERM)
                signal.sigtimedwait([], 0)
            except KeyboardInterrupt:
                pass
            raise RuntimeError("promote failed: the run failed before any step")
    finally:
        restore(handlers)
    assert stopped.value.status == 128 + signal.SIGTERM
    assert "promote failed" in str(stopped.value.__cause__)
    handlers = raise_on_stop_signals()  # the next command's life starts clean
    try:
        with pytest.raises(RuntimeError), stop_wins():
            raise RuntimeError("a step's own failure")
    finally:
        restore(handlers)


def _group(script: str) -> Group:
    group = Group([sys.executable, "-c", script], "child", stdout=subprocess.PIPE)
    assert group.leader.stdout.readline() == b"ready\n"
    return group


def _members(group: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == group:
            found.append(int(proc.name))
    return found


def test_stop_all_asks_each_child_and_kills_the_group_of_one_that_ignores_it():
    obedient, stubborn = _group(OBEDIENT), _group(STUBBORN)
    stop_all([obedient, stubborn], grace=1)
    assert obedient.leader.returncode == -signal.SIGINT  # it stopped when asked
    assert stubborn.leader.returncode == -signal.SIGKILL  # killed at the grace's end
    assert _members(obedient.leader.pid) == _members(stubborn.leader.pid) == []


def _dead_command() -> tuple[dict, subprocess.Popen]:
    """A record as a `flashrsi ui` that was SIGKILLed leaves it: its process gone, one group
    it started still running (its reaper killed too, say)."""
    command = subprocess.Popen([sys.executable, "-c", "pass"])
    started = scratch.start_time(command.pid)
    command.wait()
    left = subprocess.Popen(["sleep", "600"], process_group=0)
    group = {"name": "dagster dev", "pid": left.pid, "started": scratch.start_time(left.pid)}
    return {"pid": command.pid, "started": started, "key": "port 1", "groups": [group]}, left


def test_the_next_start_ends_what_a_killed_command_left_and_says_so(tmp_path):
    record, left = _dead_command()
    (tmp_path / f"ui-{scratch.process_space()}-1.json").write_text(json.dumps(record))
    (tmp_path / "ui-another.machine-1.json").write_text(json.dumps(record))  # not read here
    said = []
    mine = Record(tmp_path, "ui", "port 1", say=said.append)
    mine.claim()
    assert left.wait(timeout=60) == -signal.SIGKILL
    assert said == [
        f"a previous `flashrsi ui` (port 1), pid {record['pid']}, ended without stopping: "
        "killed what was left: dagster dev (1 processes)"
    ]
    mine_file = f"ui-{scratch.process_space()}-{os.getpid()}.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [mine_file, "ui-another.machine-1.json"]
    )
    mine.release()
    assert [p.name for p in tmp_path.iterdir()] == ["ui-another.machine-1.json"]


def test_a_start_is_refused_while_one_of_its_kind_holds_the_key_and_not_otherwise(tmp_path):
    Record(tmp_path, "ui", "port 1").claim()  # this process: alive
    with pytest.raises(CommandRunning, match=f"pid {os.getpid()}"):
        Record(tmp_path, "ui", "port 1").claim()
    Record(tmp_path, "ui", "port 2").claim()  # another port
    Record(tmp_path, "worker", "").claim()  # workers without a name never clash
    Record(tmp_path, "worker", "").claim()


class _Insisting:
    """A child whose stop request comes with a second Ctrl-C to this process."""

    def __init__(self, group: Group):
        self.group, self.name = group, group.name
        self.stopped, self.kill = group.stopped, group.kill

    def stop(self) -> None:
        self.group.stop()
        os.kill(os.getpid(), signal.SIGINT)


def test_a_second_ctrl_c_during_the_stop_kills_what_is_left_at_once():
    stubborn = _group(STUBBORN)
    stop_all([_Insisting(stubborn)], grace=PATIENCE)  # would wait that long without it
    assert stubborn.leader.returncode == -signal.SIGKILL
    assert _members(stubborn.leader.pid) == []
