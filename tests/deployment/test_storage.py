"""The home instance: Dagster's SQLite files with their connections kept open, seen from other
processes' instances as Dagster's own storage sees them, and a run queue looked at every second."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path

import dagster as dg
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log import SqliteEventLogStorage

from flashrsi_dagster.deployment.instance import SETTINGS, TELEMETRY_OFF, instance_dir
from flashrsi_dagster.deployment.storage import HomeStorage, OpenEventLog
from tests.conftest import PATIENCE, wait_until


@dg.asset
def number() -> int:
    return 1


@dg.asset
def double(number: int) -> int:
    return 2 * number


JOB = dg.Definitions(
    assets=[number, double], jobs=[dg.define_asset_job("both", executor_def=dg.in_process_executor)]
).resolve_job_def("both")


def _instance(home: Path, monkeypatch) -> dg.DagsterInstance:
    monkeypatch.setenv("DAGSTER_HOME", str(instance_dir(home)))
    return dg.DagsterInstance.get()


def test_a_home_instance_runs_on_it_and_another_instance_reads_the_same_files(
    tmp_path, monkeypatch
):
    writer = _instance(tmp_path, monkeypatch)
    try:
        assert isinstance(writer.get_ref().storage, HomeStorage)
        assert writer.run_coordinator.dequeue_interval_seconds == 1  # a UI launch waits <= 1 s
        result = JOB.execute_in_process(instance=writer)
        assert result.success
        reader = dg.DagsterInstance.get()  # as the UI, the daemon or a run worker opens it
        run = reader.get_run_by_id(result.run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        assert reader.fetch_materializations(dg.AssetKey("double"), limit=5).records
        events = {e.dagster_event_type for e in reader.all_logs(result.run_id) if e.dagster_event}
        assert {dg.DagsterEventType.RUN_SUCCESS, dg.DagsterEventType.STEP_SUCCESS} <= events
        reader.dispose()
    finally:
        writer.dispose()
    runs = instance_dir(tmp_path) / "history" / "runs"
    assert (runs / f"{result.run_id}.db").is_file()
    # the run ended: its file was checkpointed and let go, no write-ahead log is left
    assert not (runs / f"{result.run_id}.db-wal").exists()


def test_a_watcher_sees_the_events_of_a_running_run_as_they_are_written(tmp_path):
    base = str(tmp_path / "runs")
    writer, watcher = OpenEventLog(base), OpenEventLog(base)
    seen: list[str] = []
    arrived = threading.Event()

    def callback(entry: EventLogEntry, _cursor: str) -> None:
        seen.append(entry.user_message)
        arrived.set()

    def log(message: str) -> None:
        writer.store_event(
            EventLogEntry(
                error_info=None,
                level="INFO",
                user_message=message,
                run_id="run-1",
                timestamp=time.time(),
            )
        )

    try:
        log("first")  # the file exists before anyone watches it
        watcher.watch("run-1", None, callback)
        log("second")
        assert arrived.wait(PATIENCE), "the watcher saw no write"
        wait_until(lambda: "second" in seen, "the watcher saw the second write")
    finally:
        watcher.dispose()
        writer.dispose()


def test_an_instance_folder_made_before_gets_the_storage_and_a_users_own_is_kept(tmp_path):
    old, own = tmp_path / "old" / ".dagster", tmp_path / "own" / ".dagster"
    for folder in (old, own):
        folder.mkdir(parents=True)
    (old / "dagster.yaml").write_text(TELEMETRY_OFF)
    (own / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")

    instance_dir(old.parent), instance_dir(own.parent)

    assert (old / "dagster.yaml").read_text() == SETTINGS
    assert (own / "dagster.yaml").read_text() == "telemetry:\n  enabled: true\n"


def test_a_runs_file_is_made_as_dagsters_own_storage_makes_it(tmp_path):
    def made_by(storage_class, folder: Path) -> tuple:
        storage = storage_class(str(folder))
        with storage.run_connection("run-1"):
            pass
        storage.dispose()
        with contextlib.closing(sqlite3.connect(folder / "run-1.db")) as db:
            return (
                sorted(db.execute("SELECT type, name, sql FROM sqlite_master")),
                db.execute("SELECT version_num FROM alembic_version").fetchall(),
                db.execute("PRAGMA journal_mode").fetchall(),
            )

    ours = made_by(OpenEventLog, tmp_path / "ours")
    assert ours == made_by(SqliteEventLogStorage, tmp_path / "dagster")
    assert ours[1] and ours[2] == [("wal",)]


_OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from flashrsi_dagster.deployment.instance import persistent_instance
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
instance = persistent_instance(Path(sys.argv[1]))
instance.get_runs()
instance.dispose()
"""


def test_commands_started_at_once_on_a_new_home_both_open_its_instance(tmp_path):
    """Two processes making a new home's instance at the same moment: both open it (each
    made its storage alone, under the home's lock), rather than both failing to stamp it."""
    import subprocess
    import sys

    for attempt in range(3):
        home = tmp_path / f"home-{attempt}"
        start = str(time.time() + 2)
        command = [sys.executable, "-c", _OPEN_AT_ONCE, str(home), start]
        processes = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for process in processes:
            _, err = process.communicate(timeout=PATIENCE)
            assert process.returncode == 0, err
