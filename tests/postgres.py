"""A fresh database per test on the machine's PostgreSQL server (trust auth; CI has it at
127.0.0.1:5432), dropped afterwards. Where no server answers, the tests that need one are
skipped with the reason; `FLASHRSI_TEST_POSTGRES` names another server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager

import psycopg2
import pytest
from sqlalchemy.engine import make_url

SERVER = os.environ.get("FLASHRSI_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


def _connect(url: str):
    parsed = make_url(url)
    return psycopg2.connect(
        host=parsed.host, port=parsed.port, user=parsed.username, password=parsed.password,
        dbname=parsed.database, connect_timeout=3,
    )  # fmt: skip


def _admin():
    connection = _connect(SERVER)
    connection.autocommit = True  # CREATE / DROP DATABASE cannot run in a transaction
    return connection


def why_no_postgres() -> str | None:
    try:
        _admin().close()
    except psycopg2.Error as exc:
        return f"no PostgreSQL server at {make_url(SERVER).render_as_string()}: {exc}".strip()
    return None


_NO_POSTGRES = why_no_postgres()
needs_postgres = pytest.mark.skipif(_NO_POSTGRES is not None, reason=_NO_POSTGRES or "")


@contextmanager
def fresh_database(prefix: str = "flashrsi_test") -> Iterator[str]:
    """The URL of a new, empty database, dropped (its sessions ended) when the block ends."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with closing(_admin()) as admin, admin.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        # psycopg2: the driver dagster-postgres depends on, named as the project's URL has it
        url = make_url(SERVER).set(drivername="postgresql+psycopg2", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with closing(_admin()) as admin, admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def rows(url: str, sql: str) -> list[tuple]:
    """The rows `sql` returns from the database at `url`."""
    connection = _connect(url)
    with closing(connection), connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchall()


def connect(url: str):
    """A psycopg2 connection of the test's own to the database at `url`."""
    return _connect(url)


def _database(url: str) -> str:
    return make_url(url).database or ""


def terminate(url: str, pid: int | None = None) -> int:
    """End the sessions on the database at `url` (only `pid`'s, if given), as a restart, a
    failover or an idle timeout ends them; returns how many. The server and other databases'
    sessions are left alone (other tests use them)."""
    with closing(_admin()) as admin, admin.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
            "AND pid <> pg_backend_pid() AND (%s::int IS NULL OR pid = %s::int)",
            (_database(url), pid, pid),
        )
        return sum(1 for (ended,) in cursor.fetchall() if ended)


def waiting_for_a_lock(url: str) -> list[int]:
    """The sessions on the database at `url` that wait for a lock."""
    with closing(_admin()) as admin, admin.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            (_database(url),),
        )
        return [pid for (pid,) in cursor.fetchall()]


def accept_connections(url: str, allowed: bool) -> None:
    """Let the database at `url` take new connections or refuse them (as a server that is
    restarting does: "not currently accepting connections")."""
    with closing(_admin()) as admin, admin.cursor() as cursor:
        cursor.execute(
            f'ALTER DATABASE "{_database(url)}" ALLOW_CONNECTIONS {str(allowed).lower()}'
        )


def drop(url: str) -> None:
    """Drop the database at `url` now, its sessions ended (a database lost for good)."""
    with closing(_admin()) as admin, admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{_database(url)}" WITH (FORCE)')
