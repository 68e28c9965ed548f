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
        # psycopg2: the driver dagster-postgres depends on (SQLAlchemy 2.1 defaults to psycopg 3)
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
