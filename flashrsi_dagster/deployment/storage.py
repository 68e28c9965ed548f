"""The storage of a home's Dagster instance: Dagster's own SQLite storage — the same files,
schema and migrations — with its connections kept open.

Dagster's SQLite run and event-log storages build a new engine and a new connection for every
statement: each of a round's ~40 events (and the index rows of every asset event) opens a
file, commits with an fsync and closes it, the close checkpointing the write-ahead log with
two fsyncs more; a new run's file gets its tables one fsynced statement at a time. That was
2-4 s of every Meta-Harness round on the 2-core development machine. Here every file keeps one
engine whose connections stay open, in WAL mode with `synchronous=NORMAL`: a commit becomes
durable at the next checkpoint (at the latest when its run ends and its file is let go); a
power cut can lose the last events but never corrupts a file. These are Dagster's run and
event logs; the experiment's records, written through their own integrity chain, stay the
source of truth.

The UI follows a running run by watching its file; with connections held open a write
changes `<run>.db-wal` first, so the watcher here watches that too.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as db
import sqlalchemy.exc as db_exc
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from flashrsi_dagster.orchestration.dagster_internals import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    ConfigurableClassData,
    DagsterEventType,
    DagsterSqliteStorage,
    DagsterStorage,
    SqlEventLogStorageMetadata,
    SqliteEventLogStorage,
    SqliteEventLogStorageWatchdog,
    SqliteRunStorage,
    SqliteScheduleStorage,
    StringSource,
    get_alembic_config,
    sqlite_event_log,
)

CONFIG = """storage:
  custom:
    module: flashrsi_dagster.deployment.storage
    class: HomeStorage
    config:
      base_dir:
        env: DAGSTER_HOME
"""
"""The `dagster.yaml` section that gives an instance folder this storage."""

RUN_ENDED = {
    DagsterEventType.RUN_SUCCESS,
    DagsterEventType.RUN_FAILURE,
    DagsterEventType.RUN_CANCELED,
}


class HomeStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage under `base_dir` (the folders `dagster.yaml`'s default
    `storage: sqlite` uses), with open connections for runs and event logs."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = OpenRunStorage.from_local(os.path.join(base_dir, "history", ""))
        self._event_log_storage = OpenEventLog(os.path.join(base_dir, "history", "runs", ""))
        self._schedule_storage = SqliteScheduleStorage.from_local(
            os.path.join(base_dir, "schedules")
        )
        self._inst_data = inst_data
        DagsterStorage.__init__(self)

    @classmethod
    def config_type(cls) -> dict:
        return {"base_dir": StringSource}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> HomeStorage:
        return cls.from_local(inst_data=inst_data, **config_value)


class OpenRunStorage(SqliteRunStorage):
    """Dagster's SQLite run storage on one engine whose connections stay open."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(conn_string, inst_data)
        self._engines = _Engines(keep=1)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engines.get(self._conn_string).connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        self._engines.close()
        super().dispose()


class OpenEventLog(SqliteEventLogStorage):
    """Dagster's run-sharded SQLite event log whose connections stay open: one engine per
    file, for the index and the most recently used runs' files."""

    KEEP = 8

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines = _Engines(self.KEEP)
        super().__init__(base_dir, inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engines.get(self.conn_string_for_shard(shard))
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        """A new run's file as Dagster makes it — its tables, stamped with the head migration
        — reading the migration scripts once per process instead of twice per run."""
        if for_index_shard:
            return super()._initdb(engine, for_index_shard=True)
        try:
            with engine.connect() as conn:
                context = MigrationContext.configure(conn)
                if context.get_current_revision() is None:
                    SqlEventLogStorageMetadata.create_all(conn)
                    context.stamp(_migrations(), "head")
                    conn.commit()
        except db_exc.DatabaseError:  # another process made it at the same time
            super()._initdb(engine)

    def has_table(self, table_name: str) -> bool:
        engine = self._engines.get(self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    def store_event(self, event) -> None:
        super().store_event(event)
        if event.is_dagster_event and event.dagster_event_type in RUN_ENDED:
            with self._db_lock:  # the run's file is complete: checkpoint it and let it go
                self._engines.drop(self.conn_string_for_shard(event.run_id))

    def watch(self, run_id: str, cursor: str | None, callback) -> None:
        if not self._obs:
            from watchdog.observers import Observer

            self._obs = Observer()
            self._obs.start()
        watchdog = _Watchdog(self, run_id, callback, cursor)
        schedule = self._obs.schedule(watchdog, self._base_dir, recursive=True)
        self._watchers[run_id][callback] = (watchdog, schedule)

    def dispose(self) -> None:
        with self._db_lock:
            self._engines.close()
        super().dispose()


class _Watchdog(SqliteEventLogStorageWatchdog):
    """Dagster's watcher of a run's file, which also sees writes to its write-ahead log."""

    @property
    def patterns(self) -> list[str]:
        return [self._log_path, f"{self._log_path}-wal"]

    def on_modified(self, event) -> None:
        self._process_log()


class _Engines:
    """An engine per SQLite file, the `keep` most recently used; none crosses a fork."""

    def __init__(self, keep: int) -> None:
        self._keep, self._pid = keep, os.getpid()
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, url: str) -> Engine:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's connections are not its
                for engine in self._engines.values():
                    engine.dispose(close=False)
                self._engines.clear()
                self._pid = os.getpid()
            engine = self._engines.pop(url, None) or _engine(url)
            self._engines[url] = engine
            while len(self._engines) > self._keep:
                self._engines.popitem(last=False)[1].dispose()
            return engine

    def drop(self, url: str) -> None:
        with self._lock:
            engine = self._engines.pop(url, None)
        if engine is not None:
            engine.dispose()

    def close(self) -> None:
        with self._lock:
            engines = list(self._engines.values())
            self._engines.clear()
        for engine in engines:
            engine.dispose()


@functools.cache
def _migrations() -> ScriptDirectory:
    """Dagster's migration scripts, as its own event-log storage configures them."""
    return ScriptDirectory.from_config(get_alembic_config(sqlite_event_log.__file__))


def _engine(url: str) -> Engine:
    engine = db.create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})

    @db.event.listens_for(engine, "connect")
    def _wal(dbapi_connection, _record) -> None:
        # WAL first: a new run's file gets its tables without an fsync per statement
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return engine
