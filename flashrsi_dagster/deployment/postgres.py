"""The storage of a home's Dagster instance on PostgreSQL: dagster-postgres' own storage (runs,
event logs, schedules and sensor ticks in one database), its URL read from the environment at
every start, so no password is ever written.

dagster-postgres is built on psycopg2 (SQLAlchemy is held below 2.1, which would read a plain
`postgresql://` as psycopg 3). The URL a user pastes (`postgresql://`, `postgres://`) is named
the psycopg2 driver here all the same, in every process that opens the instance (the CLI, the
webserver, the daemon, run workers); a URL naming another driver is refused.

dagster-postgres opens a new connection — a new server process, its authentication — for every
statement outside the webserver; a run's ~40 events paid that each. Here runs and events keep
their connections open from the start, as dagster-postgres does for the webserver (a pool of one,
more while threads need them), with no statement timeout; a connection is only ever used by
the process that opened it. A connection lost (a restart, a failover, an idle timeout) is
replaced and what it was doing retried (`reconnect.py`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as db
from dagster_postgres import (
    DagsterPostgresStorage,
    PostgresEventLogStorage,
    PostgresRunStorage,
    PostgresScheduleStorage,
)
from dagster_postgres.utils import create_pg_engine, set_pg_statement_timeout
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError

from flashrsi_dagster.deployment import reconnect
from flashrsi_dagster.orchestration.dagster_internals import (
    ConfigurableClassData,
    DagsterStorage,
    StringSource,
)

URL_ENV = "FLASHRSI_POSTGRES_URL"
"""The setting: where set, a new home's instance is made on this database."""

CONFIG = f"""storage:
  custom:
    module: flashrsi_dagster.deployment.postgres
    class: PostgresStorage
    config:
      postgres_url:
        env: {URL_ENV}
"""
"""The `dagster.yaml` section that puts an instance on the database `FLASHRSI_POSTGRES_URL`
names; the file holds the variable's name, never its value."""

EXPECTED = "postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"


class StorageSettingError(ValueError):
    """The instance's storage setting cannot be used; the message says why and what to do."""


def psycopg2_url(url: str) -> str:
    """`url` on the psycopg2 driver; `StorageSettingError` (never showing the URL's password)
    for anything but a PostgreSQL URL naming a database."""
    try:
        parsed = make_url(url.strip())
    except (ArgumentError, ValueError):
        raise StorageSettingError(f"{URL_ENV} is not a database URL; expected {EXPECTED}") from None
    backend, _, driver = parsed.drivername.partition("+")
    if backend not in ("postgresql", "postgres"):
        raise StorageSettingError(
            f"{URL_ENV} names {backend!r}, not PostgreSQL; expected {EXPECTED}"
        )
    if driver not in ("", "psycopg2"):
        raise StorageSettingError(
            f"{URL_ENV} names the driver {driver!r}; dagster-postgres runs on psycopg2: "
            f"write postgresql:// (or postgresql+psycopg2://)"
        )
    if not parsed.database:
        raise StorageSettingError(f"{URL_ENV} names no database; expected {EXPECTED}")
    return parsed.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)


def shown(url: str) -> str:
    """The URL as it may be printed: its password masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "(not a URL)"


class PostgresStorage(DagsterPostgresStorage):
    """dagster-postgres' storage on `postgres_url` (given the psycopg2 driver); a database
    that cannot be reached is a `StorageSettingError` naming it, its password masked; its
    connections stay open, and are replaced when lost (`reconnect.py`)."""

    OVERFLOW = 8
    """Connections beyond the pooled one while threads (the daemon's) need them at once."""

    def __init__(self, postgres_url: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.postgres_url, self.should_autocreate_tables = postgres_url, True
        self._inst_data = inst_data
        self._run_storage = _open(_Runs(postgres_url))
        self._event_log_storage = _open(_Events(postgres_url))
        self._schedule_storage = _Schedules(postgres_url)  # a tick at a time
        DagsterStorage.__init__(self)

    @classmethod
    def config_type(cls) -> dict:
        return {"postgres_url": StringSource}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> PostgresStorage:
        url = psycopg2_url(config_value["postgres_url"])
        try:
            return cls(postgres_url=url, inst_data=inst_data)
        except Exception as exc:
            raise StorageSettingError(_unusable(url, exc)) from None


def _unusable(url: str, exc: Exception) -> str:
    cause = exc.__cause__ or exc
    message = " ".join(str(getattr(cause, "orig", None) or cause).split())
    password = make_url(url).password
    if password:
        message = message.replace(str(password), "***")
    return (
        f"the Dagster instance's database {shown(url)} (from {URL_ENV}) cannot be used: "
        f"{type(cause).__name__}: {message}"
    )


class _Closing:
    def dispose(self) -> None:
        super().dispose()  # type: ignore[misc]
        self._engine.dispose()  # type: ignore[attr-defined]


def _sent_again_whole(base: type, name: str):
    """`base.name`, a schema check, run again whole when its connection is lost
    (`reconnect.whole`)."""
    check = getattr(base, name)

    def method(self, *args):
        return reconnect.whole(lambda: check(self, *args))

    method.__name__ = name
    return method


class _Runs(_Closing, PostgresRunStorage):
    def connect(self):
        return reconnect.connection(self._engine)

    has_run_stats_index_cols = _sent_again_whole(PostgresRunStorage, "has_run_stats_index_cols")
    has_bulk_actions_selector_cols = _sent_again_whole(
        PostgresRunStorage, "has_bulk_actions_selector_cols"
    )
    has_backfill_id_column = _sent_again_whole(PostgresRunStorage, "has_backfill_id_column")
    has_bulk_action_job_name_column = _sent_again_whole(
        PostgresRunStorage, "has_bulk_action_job_name_column"
    )
    has_backfill_tags_table = _sent_again_whole(PostgresRunStorage, "has_backfill_tags_table")


class _Events(_Closing, PostgresEventLogStorage):
    """The event log, whose asset index rows for an event (written in one transaction, which a
    lost connection would cut) are sent as `reconnect.Writes`: whole again when cut."""

    def _connect(self):
        return reconnect.connection(self._engine)

    has_table = _sent_again_whole(PostgresEventLogStorage, "has_table")
    has_asset_key_col = _sent_again_whole(PostgresEventLogStorage, "has_asset_key_col")
    has_secondary_index = _sent_again_whole(PostgresEventLogStorage, "has_secondary_index")

    def store_event(self, event) -> None:
        with _writes_only():
            super().store_event(event)

    def store_event_batch(self, events) -> None:
        with _writes_only():
            super().store_event_batch(events)

    @contextmanager
    def index_transaction(self) -> Iterator:
        if not getattr(_WRITING_EVENTS, "depth", 0):  # a transaction that reads: as Dagster's
            with super().index_transaction() as conn:
                yield conn
            return
        writes = reconnect.Writes()
        yield writes
        writes.commit(self._engine)


_WRITING_EVENTS = threading.local()
"""How deep this thread is in `_Events.store_event`: its index transactions only write."""


@contextmanager
def _writes_only() -> Iterator[None]:
    depth = getattr(_WRITING_EVENTS, "depth", 0)
    _WRITING_EVENTS.depth = depth + 1
    try:
        yield
    finally:
        _WRITING_EVENTS.depth = depth


class _Schedules(PostgresScheduleStorage):
    """Dagster's schedule storage, a connection per statement, its statements retried."""

    def __init__(self, postgres_url: str) -> None:
        super().__init__(postgres_url)
        reconnect.resilient(self._engine)

    def connect(self, run_id: str | None = None):
        return reconnect.connection(self._engine)


def _open(part):
    """`part` on open connections (as dagster-postgres' webserver pool), each kept to its
    process, checked before use and replaced when lost."""
    part._engine = _pooled(part.postgres_url)
    return part


def _pooled(url: str) -> Engine:
    """dagster-postgres' webserver engine (`optimize_for_webserver`), its connections pinged
    before use (`pool_pre_ping`) and its statements retried on a new one (`reconnect.py`)."""
    options = make_url(url).query.get("options")
    engine = create_pg_engine(
        url,
        isolation_level="AUTOCOMMIT",
        pool_size=1,
        pool_recycle=3600,
        max_overflow=PostgresStorage.OVERFLOW,
        pool_pre_ping=True,
        **({"connect_args": {"options": options}} if options else {}),
    )
    db.event.listen(engine, "connect", lambda conn, _: set_pg_statement_timeout(conn, 0))
    _own_process(engine)
    return reconnect.resilient(engine)


def _own_process(engine: Engine) -> None:
    """A pooled connection that crossed a fork is dropped, not shared (SQLAlchemy's recipe)."""

    @db.event.listens_for(engine, "connect")
    def _connected(_dbapi_connection, record) -> None:
        record.info["pid"] = os.getpid()

    @db.event.listens_for(engine, "checkout")
    def _checked_out(_dbapi_connection, record, proxy) -> None:
        if record.info["pid"] != os.getpid():
            record.dbapi_connection = proxy.dbapi_connection = None
            raise DisconnectionError("a connection of another process")
