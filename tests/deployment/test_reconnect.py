"""A home's Dagster instance on PostgreSQL when its connections are lost, as a restart, a
failover, an idle timeout or `pg_terminate_backend` loses them: a statement cut while it runs is
sent again on a new connection, an event's asset index writes cut mid-transaction are sent again
whole, a database that refuses connections for a while is waited for, and one lost for good is
named in one line (its password masked). `flashrsi run` with its connections (the CLI's, the run
workers') ended again and again comes out as an undisturbed run; with its database dropped it
says so in one line and exits non-zero. Only each test's own database's sessions are ended: the
server is shared."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from contextlib import closing

import dagster as dg
import pytest
import sqlalchemy as sa
from dagster._core.events import EngineEventData
from dagster._utils.error import serializable_error_info_from_exc_info

from flashrsi_dagster.deployment import reconnect
from flashrsi_dagster.deployment.failures import GENERIC, run_failure
from flashrsi_dagster.deployment.postgres import URL_ENV
from tests.conftest import CANARY
from tests.dagster_instances import plain_url, postgres_settings
from tests.deployment.test_parallel_candidates import (
    EXAMPLE,
    FLASHRSI,
    OVERRIDES,
    _check_experiment,
    sequential,
)
from tests.deployment.test_storage import JOB
from tests.postgres import (
    accept_connections,
    connect,
    drop,
    fresh_database,
    needs_postgres,
    rows,
    terminate,
    waiting_for_a_lock,
)


def _until(condition, what: str, timeout: float = 300):
    """`condition()`'s first true value, looked for until `timeout` (a loaded machine is slow)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what}: not seen in {timeout:.0f} s")


def _in_thread(work) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except Exception as exc:  # the test asserts on it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _waiting(url: str, outcome: dict) -> int:
    """The session that waits for the test's lock, once the work in the thread sends its
    statement (the work must not have ended: it waits until the test lets it go)."""
    waiting = _until(lambda: outcome or waiting_for_a_lock(url), "a statement waiting")
    assert waiting is not outcome, f"it ended while the lock was held: {outcome}"
    return waiting[0]


@needs_postgres
def test_a_statement_cut_while_it_runs_is_sent_again_on_a_new_connection():
    with (
        fresh_database() as url,
        dg.instance_for_test(overrides=postgres_settings(url)) as instance,
    ):
        run_id = JOB.execute_in_process(instance=instance).run_id
        with closing(connect(url)) as holder, holder.cursor() as cursor:
            cursor.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")  # until the rollback
            thread, outcome = _in_thread(lambda: [r.run_id for r in instance.get_runs()])
            for _ in range(2):  # its connection ended twice while it waits
                assert terminate(url, _waiting(url, outcome)) == 1
            _waiting(url, outcome)  # sent a third time
            holder.rollback()
            thread.join(timeout=300)
        assert outcome == {"value": [run_id]}


@needs_postgres
def test_an_events_asset_index_writes_cut_mid_transaction_are_sent_again_whole():
    """The write seen failing on main: a run's event, its asset index rows written in one
    transaction, the connection ended in the middle. The run goes on, nothing written twice."""
    number = dg.AssetKey("number")
    with (
        fresh_database() as url,
        dg.instance_for_test(overrides=postgres_settings(url)) as instance,
    ):
        JOB.execute_in_process(instance=instance)
        with closing(connect(url)) as holder, holder.cursor() as cursor:
            # the asset's index row, locked: the next run's index transaction waits for it
            cursor.execute(
                "SELECT 1 FROM asset_keys WHERE asset_key = %s FOR UPDATE", (number.to_string(),)
            )
            thread, outcome = _in_thread(lambda: JOB.execute_in_process(instance=instance))
            for _ in range(2):
                assert terminate(url, _waiting(url, outcome)) == 1
            _waiting(url, outcome)  # sent a third time
            holder.rollback()
            thread.join(timeout=300)
        result = outcome["value"]
        assert result.success
        written = instance.get_records_for_run(
            result.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        ).records
        assert sorted(r.asset_key.to_user_string() for r in written) == ["double", "number"]
        latest = instance.get_latest_materialization_event(number)
        assert latest is not None and latest.run_id == result.run_id


@needs_postgres
def test_a_database_that_refuses_connections_for_a_while_is_waited_for(monkeypatch):
    tries: list[int] = []
    with (
        fresh_database() as url,
        dg.instance_for_test(overrides=postgres_settings(url)) as instance,
    ):
        run_id = JOB.execute_in_process(instance=instance).run_id

        def wait(retry: int) -> float:  # the policy's waits, short; it is back at the third
            tries.append(retry)
            if retry == 3:
                accept_connections(url, True)
            return 0.01

        monkeypatch.setattr(reconnect, "wait", wait)
        accept_connections(url, False)  # as a server restarting refuses them
        assert terminate(url) >= 1
        assert [r.run_id for r in instance.get_runs()] == [run_id]
    assert tries == [1, 2, 3]


@needs_postgres
def test_a_database_lost_for_good_is_named_in_one_line_without_its_password(monkeypatch):
    monkeypatch.setattr(reconnect, "wait", lambda retry: 0.01)
    with fresh_database() as url:
        # a password the server (trust auth) ignores: it must be printed nowhere
        settings = postgres_settings(url)
        pasted = settings["storage"]["custom"]["config"]["postgres_url"]
        settings["storage"]["custom"]["config"]["postgres_url"] = pasted.replace(
            "postgres@", f"postgres:{CANARY}@"
        )
        database = sa.engine.make_url(url).database
        with dg.instance_for_test(overrides=settings) as instance:
            instance.get_runs()
            accept_connections(url, False)
            terminate(url)
            with pytest.raises(sa.exc.OperationalError) as caught:
                instance.get_runs()
    assert reconnect.database_fault(caught.value) == (
        f'PostgreSQL connection lost: connection to server at "127.0.0.1", port 5432 failed: '
        f'database "{database}" is not currently accepting connections '
        f"(postgresql+psycopg2://postgres:***@127.0.0.1:5432/{database}; retried 5 times)"
    )
    assert CANARY not in str(caught.value)


def test_a_run_worker_that_lost_its_database_says_so_not_dagsters_generic_failure():
    """A run worker whose database writes failed outside any step: its run's failure is
    Dagster's generic message; the error it reported says why, in one line."""
    engine = sa.create_engine(f"postgresql+psycopg2://postgres:{CANARY}@db.example:5432/home")
    cut = reconnect.lost(engine, OSError("server closed the connection unexpectedly\nmore"), 5)
    with dg.instance_for_test() as instance:
        run = instance.create_run_for_job(JOB)
        try:
            raise sa.exc.OperationalError("INSERT INTO event_logs ...", {}, cut)
        except sa.exc.OperationalError:
            error = serializable_error_info_from_exc_info(sys.exc_info())
        instance.report_engine_event(
            "An exception was thrown during execution", run, EngineEventData.engine_error(error)
        )
        instance.report_run_failed(run)
        failure = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert failure[-1].message == GENERIC
        assert run_failure(instance, run.run_id) == (
            "PostgreSQL connection lost: server closed the connection unexpectedly "
            "(postgresql+psycopg2://postgres:***@db.example:5432/home; retried 5 times)"
        )


def _flashrsi_run(home, url: str, log, *overrides: str) -> subprocess.Popen:
    """`flashrsi run` of the example on a home whose instance is on the database `url`."""
    command = [FLASHRSI, "run", "--config", str(EXAMPLE), "--experiment.home", str(home)]
    return subprocess.Popen(
        [*command, *overrides],
        cwd=home.parent,
        env={**os.environ, URL_ENV: url},
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )


def _runs_started(url: str) -> bool:
    """Whether the instance has its tables (Dagster makes them at the first open: that is
    not retried) and a run in them."""
    if rows(url, "SELECT to_regclass('runs') IS NULL")[0][0]:
        return False
    return rows(url, "SELECT count(*) FROM runs")[0][0] > 0


@pytest.mark.slow
@needs_postgres
def test_a_run_whose_connections_are_ended_again_and_again_comes_out_as_an_undisturbed_one(
    tmp_path, tmp_path_factory, worker_id
):
    """Every session of the experiment's database ended every 2 s, from its first run to its
    end: the CLI's pooled connections, the run queue's, the four candidates' run workers'."""
    home, name, ended = tmp_path / ".flashrsi", "meta-harness-demo", []
    home.mkdir()
    with fresh_database() as url, (tmp_path / "stderr.log").open("w") as log:
        run = _flashrsi_run(home, plain_url(url), log, *OVERRIDES)
        _until(lambda: run.poll() is not None or _runs_started(url), "the first run")
        while run.poll() is None:
            ended.append(terminate(url))
            time.sleep(2)
        output = run.stdout.read()
        keys = rows(url, "SELECT DISTINCT value FROM run_tags WHERE key = 'dagster/run_key'")
    assert run.returncode == 0, output + (tmp_path / "stderr.log").read_text()[-5000:]
    assert sum(ended) >= 10  # sessions were ended throughout, not once
    assert "Traceback" not in output
    assert len(keys) == 1 + 4 + 1  # the seed, four candidates, finalize (a step run again
    # because its run lost its connection where nothing could be retried keeps its run key)
    assert _check_experiment(home, name) == sequential(tmp_path_factory, worker_id)


@needs_postgres
def test_a_database_dropped_mid_run_is_named_in_one_line_and_the_run_exits_non_zero(tmp_path):
    home = tmp_path / ".flashrsi"
    home.mkdir()
    with fresh_database() as url, (tmp_path / "stderr.log").open("w") as log:
        database = sa.engine.make_url(url).database
        pasted = plain_url(url).replace("postgres@", f"postgres:{CANARY}@")
        run = _flashrsi_run(home, pasted, log, "--benchmark.limit", "2")
        _until(lambda: run.poll() is not None or _runs_started(url), "the first run")
        drop(url)
        output, _ = run.communicate(timeout=600)
    errors = (tmp_path / "stderr.log").read_text()
    assert run.returncode == 1, output + errors
    last = errors.splitlines()[-1]
    assert last.startswith("error: ") and "PostgreSQL connection lost: " in last, errors
    assert f'database "{database}" does not exist' in last
    assert f"(postgresql+psycopg2://postgres:***@127.0.0.1:5432/{database}" in last
    assert CANARY not in output + errors
    assert "Traceback (most recent call last)" not in errors
