"""A home's Dagster instance on PostgreSQL: one setting (`FLASHRSI_POSTGRES_URL`) puts a new
home's runs, events and schedules in the database it names, the generated `dagster.yaml` holds
the variable's name and never the URL, a pasted `postgresql://` URL is given the driver that is
installed, and a home is never moved between storages silently."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml
from sqlalchemy.engine import make_url

from flashrsi_dagster.cli import main
from flashrsi_dagster.deployment.instance import instance_dir, persistent_instance
from flashrsi_dagster.deployment.postgres import URL_ENV, StorageSettingError, psycopg2_url
from tests.conftest import CANARY
from tests.dagster_instances import plain_url
from tests.deployment.test_storage import JOB
from tests.postgres import fresh_database, needs_postgres, rows

EXAMPLE = Path(__file__).parents[2] / "examples" / "meta_harness.yaml"
BIN = Path(sys.executable).parent


def test_a_pasted_url_is_given_the_installed_driver_and_others_are_refused():
    # what Dagster's own config makes of a plain URL: dagster-postgres' driver (SQLAlchemy 2.0)
    assert sa.create_engine("postgresql://u@h/db").dialect.driver == "psycopg2"
    normalised = "postgresql+psycopg2://u:pw@h:5433/db?sslmode=require"
    for pasted in (
        "postgresql://u:pw@h:5433/db?sslmode=require",
        "postgres://u:pw@h:5433/db?sslmode=require",
        f"  {normalised}\n",
    ):
        assert psycopg2_url(pasted) == normalised

    refused = {
        "postgresql+psycopg://u:s3cret@h/db": "the driver 'psycopg'; dagster-postgres runs on",
        "postgresql+asyncpg://u:s3cret@h/db": "the driver 'asyncpg'",
        "mysql://u:s3cret@h/db": "names 'mysql', not PostgreSQL",
        "postgresql://u:s3cret@h": "names no database",
        "s3cret": "is not a database URL",
    }
    for url, why in refused.items():
        with pytest.raises(StorageSettingError, match=why) as caught:
            psycopg2_url(url)
        assert URL_ENV in str(caught.value) and "s3cret" not in str(caught.value)


@needs_postgres
def test_the_setting_puts_a_new_homes_instance_on_postgres_without_writing_the_url(
    tmp_path, monkeypatch
):
    with fresh_database() as url:
        # a password the server (trust auth) ignores: it must be written nowhere
        pasted = plain_url(url).replace("postgres@", f"postgres:{CANARY}@")
        monkeypatch.setenv(URL_ENV, pasted)
        writer = persistent_instance(tmp_path)
        try:
            result = JOB.execute_in_process(instance=writer)
            assert result.success
            reader = dg.DagsterInstance.get()  # as the UI, the daemon or a run worker opens it
            assert reader.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.SUCCESS
            assert reader.fetch_materializations(dg.AssetKey("double"), limit=5).records
            reader.dispose()
        finally:
            writer.dispose()
        assert rows(url, "SELECT run_id, status FROM runs") == [(result.run_id, "SUCCESS")]
        events = rows(url, f"SELECT event FROM event_logs WHERE run_id = '{result.run_id}'")
        assert len(events) > 10 and not any(CANARY in e for (e,) in events)

    settings = (instance_dir(tmp_path) / "dagster.yaml").read_text()
    assert f"postgres_url:\n        env: {URL_ENV}\n" in settings
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if CANARY.encode() in p.read_bytes()]
    assert not (instance_dir(tmp_path) / "history").exists()  # no SQLite run storage


@needs_postgres
def test_a_database_that_cannot_be_reached_is_named_with_its_password_masked(tmp_path, monkeypatch):
    monkeypatch.setenv(URL_ENV, f"postgresql://postgres:{CANARY}@127.0.0.1:1/nowhere")
    with pytest.raises(StorageSettingError) as caught:
        persistent_instance(tmp_path)
    message = str(caught.value)
    assert "database postgresql+psycopg2://postgres:***@127.0.0.1:1/nowhere" in message
    assert f"(from {URL_ENV}) cannot be used: OperationalError" in message
    assert CANARY not in message


def test_a_home_is_never_moved_between_storages_silently(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(URL_ENV, raising=False)
    sqlite_home, postgres_home, own = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    made = (instance_dir(sqlite_home) / "dagster.yaml").read_text()
    monkeypatch.setenv(URL_ENV, "postgresql://postgres@127.0.0.1/flashrsi_unused")
    on_postgres = (instance_dir(postgres_home) / "dagster.yaml").read_text()
    (own / ".dagster").mkdir(parents=True)
    (own / ".dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")

    with pytest.raises(StorageSettingError) as to_postgres:
        instance_dir(sqlite_home)
    assert instance_dir(own) == own / ".dagster"  # a user's own file: kept, not judged
    monkeypatch.delenv(URL_ENV)
    with pytest.raises(StorageSettingError) as to_sqlite:
        instance_dir(postgres_home)

    folder = sqlite_home / ".dagster"
    assert str(to_postgres.value) == (
        f"{folder / 'dagster.yaml'}: this home's Dagster instance keeps its runs in SQLite files "
        f"under it, but {URL_ENV} is set; nothing was changed. To stay on sqlite, unset it. To "
        f"switch, move the instance folder aside (`mv {folder} {folder}.sqlite`) and run again: "
        "a new instance is made on the other storage and the experiments carry on from their "
        f"records; the old run history stays readable with DAGSTER_HOME={folder}.sqlite"
    )
    assert f"in the PostgreSQL database it names, but {URL_ENV} is not set" in str(to_sqlite.value)
    assert (sqlite_home / ".dagster" / "dagster.yaml").read_text() == made
    assert (postgres_home / ".dagster" / "dagster.yaml").read_text() == on_postgres
    assert (own / ".dagster" / "dagster.yaml").read_text() == "telemetry:\n  enabled: true\n"

    # `flashrsi run` refuses it before it writes anything: exit 2, the reason on stderr
    monkeypatch.setenv(URL_ENV, "postgresql://postgres@127.0.0.1/flashrsi_unused")
    args = ["--config", str(EXAMPLE), "--experiment.home", str(sqlite_home)]
    assert main(["run", *args, "--benchmark.limit", "2", "--algorithm.max_steps", "1"]) == 2
    assert "this home's Dagster instance keeps its runs in SQLite" in capsys.readouterr().err
    assert sorted(p.name for p in sqlite_home.iterdir()) == [".dagster"]


def _experiment_runs(instance: dg.DagsterInstance, name: str) -> list[dg.DagsterRun]:
    return list(instance.get_runs(filters=dg.RunsFilter(tags={"flashrsi/experiment": name})))


@pytest.mark.slow
@needs_postgres
def test_the_daemon_drives_an_experiment_through_the_queue_on_postgres(tmp_path, monkeypatch):
    """`dagster-daemon` with the round driver sensor on, as under `flashrsi ui`: the sensor
    requests each step, the queue hands it to a run worker, every record lands in PostgreSQL."""
    home, name = tmp_path / ".flashrsi", "meta-harness-demo"
    with fresh_database() as url:
        monkeypatch.setenv(URL_ENV, plain_url(url))
        monkeypatch.setenv("DAGSTER_HOME", str(instance_dir(home)))
        env = dict(os.environ)
        init = [str(BIN / "flashrsi"), "init", "--config", str(EXAMPLE)]
        init += ["--experiment.home", str(home), "--benchmark.limit", "2"]
        init += ["--algorithm.max_steps", "1"]
        subprocess.run(init, cwd=tmp_path, env=env, check=True, capture_output=True)
        module = ["-m", "flashrsi_dagster.definitions"]
        started = subprocess.run(
            [str(BIN / "dagster"), "sensor", "start", "round_driver", *module],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        log = (tmp_path / "daemon.log").open("wb")
        daemon = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", *module],
            cwd=tmp_path, env=env, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
        instance = dg.DagsterInstance.get()
        try:
            runs = _wait_for_runs(instance, name, finished=1, daemon=daemon)
        finally:
            os.killpg(daemon.pid, 15)
            daemon.wait(timeout=60)
            log.close()
        first = runs[-1]  # newest first
        assert first.status == dg.DagsterRunStatus.SUCCESS, (tmp_path / "daemon.log").read_text()
        enqueued = instance.get_records_for_run(
            first.run_id, of_type=dg.DagsterEventType.RUN_ENQUEUED
        ).records
        assert enqueued and first.tags["dagster/run_key"] == f"{name}:evaluate_seed:r000.c0"
        ticks = rows(url, "SELECT count(*) FROM job_ticks")[0][0]
        assert ticks >= 1 and (rows(url, "SELECT count(*) FROM runs")[0][0]) >= 1
        instance.dispose()
    assert (home / name / "records" / "meta_harness" / "round-000.json").is_file()
    assert not (home / ".dagster" / "history").exists()


def _wait_for_runs(instance, name: str, finished: int, daemon, timeout: float = 600) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert daemon.poll() is None, "the daemon exited"
        runs = _experiment_runs(instance, name)
        if sum(r.is_finished for r in runs) >= finished:
            return runs
        time.sleep(1)
    raise AssertionError(f"no run of {name} finished in {timeout:.0f} s")


@needs_postgres
def test_a_users_own_dagster_yaml_on_dagsters_postgres_storage_is_used_as_written(
    tmp_path, monkeypatch
):
    """docs/scaling-out/storage.md's other route: Dagster's own `storage: postgres` parts."""
    monkeypatch.delenv(URL_ENV, raising=False)
    with fresh_database() as url:
        parsed = make_url(url)
        own = {
            "telemetry": {"enabled": False},
            "storage": {
                "postgres": {
                    "postgres_db": {
                        "hostname": parsed.host,
                        "username": parsed.username,
                        "db_name": parsed.database,
                        "port": parsed.port or 5432,
                        "scheme": "postgresql+psycopg2",
                    }
                }
            },
        }
        settings = tmp_path / ".dagster" / "dagster.yaml"
        settings.parent.mkdir()
        settings.write_text(yaml.safe_dump(own))
        instance = persistent_instance(tmp_path)
        try:
            result = JOB.execute_in_process(instance=instance)
        finally:
            instance.dispose()
        assert result.success
        assert rows(url, "SELECT run_id FROM runs") == [(result.run_id,)]
    assert yaml.safe_load(settings.read_text()) == own


DAGSTERS_DOCUMENTED_STORAGE = """\
storage:
  postgres:
    postgres_db:
      username:
        env: DAGSTER_PG_USERNAME
      password:
        env: DAGSTER_PG_PASSWORD
      hostname:
        env: DAGSTER_PG_HOST
      db_name:
        env: DAGSTER_PG_DB
      port: {port}
"""
"""`dagster.yaml` as Dagster's deployment docs write it (and its Helm chart renders it): no
`scheme`, so dagster-postgres makes a plain `postgresql://` URL, which must reach psycopg2."""


@pytest.mark.slow
@needs_postgres
def test_an_experiment_runs_on_dagsters_documented_postgres_config(tmp_path, monkeypatch):
    monkeypatch.delenv(URL_ENV, raising=False)
    home = tmp_path / "home"
    with fresh_database() as url:
        parsed = make_url(url)
        monkeypatch.setenv("DAGSTER_PG_USERNAME", parsed.username or "")
        monkeypatch.setenv("DAGSTER_PG_PASSWORD", CANARY)  # trust auth: ignored, never written
        monkeypatch.setenv("DAGSTER_PG_HOST", parsed.host or "")
        monkeypatch.setenv("DAGSTER_PG_DB", parsed.database or "")
        (home / ".dagster").mkdir(parents=True)
        settings = DAGSTERS_DOCUMENTED_STORAGE.format(port=parsed.port or 5432)
        (home / ".dagster" / "dagster.yaml").write_text(settings)
        args = ["--config", str(EXAMPLE), "--experiment.home", str(home)]
        code = main(["run", *args, "--benchmark.limit", "2", "--algorithm.max_steps", "1"])

        assert code == 0
        runs = rows(url, "SELECT status FROM runs")
        assert runs and {status for (status,) in runs} == {"SUCCESS"}
        assert rows(url, "SELECT count(*) FROM event_logs")[0][0] > 10
    assert (home / ".dagster" / "dagster.yaml").read_text() == settings
    written = [p for p in home.rglob("*") if p.is_file()]
    assert not [p for p in written if CANARY.encode() in p.read_bytes()]
