"""PostgreSQL connections that outlive a restart, a failover, an idle timeout or a
`pg_terminate_backend`: what the instance's storage (`postgres.py`) does when its connection
to the database is lost, and the one line that says so when it gives up.

- A pooled connection is pinged before each use (SQLAlchemy's `pool_pre_ping`): one that died
  while idle is replaced before a statement is sent on it.
- Taking a connection (connecting, or a ping that fails and reconnects) is retried `RETRIES`
  times, waiting 1, 2, 4, 8 and 16 s (31 s in all: a restart or a failover that takes less
  is ridden out).
- A statement whose connection is lost while it runs is sent again on a new connection, as
  often: every statement of these storages runs in autocommit, so it was applied whole or not
  at all (SQLAlchemy's "reconnect and retry" recipe for autocommit). A statement inside a
  transaction (Dagster's asset index writes) is not: what the transaction did before it is gone.
- A write refused as read-only (`cannot execute INSERT in a read-only transaction`: a
  failover's standby, or the old primary demoted, still answering) is a connection to
  replace as well, with the same waits.
- A cause that no wait mends (the database does not exist, the credentials are refused) is not
  retried.

What still fails raises `psycopg2.OperationalError` carrying one line, `LOST: <cause> (<URL,
password masked>; retried N times)`, which `fault_line` finds again in any message that wraps
it (a step's failure, a run worker's error) and `database_fault` in an exception's chain."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg2
import psycopg2.errors
import sqlalchemy as db
import sqlalchemy.exc as db_exc
from sqlalchemy.engine import Connection, Engine

RETRIES = 5
FIRST_WAIT = 1.0
"""Seconds before the first retry; each later one waits twice as long as the one before."""
LOST = "PostgreSQL connection lost"
PERMANENT = (
    "does not exist",
    "authentication failed",
    "no pg_hba.conf entry",
    "no password supplied",
    "permission denied",
)
"""Causes of a refused connection that waiting does not mend."""


class DatabaseLost(RuntimeError):
    """The instance's database could not be reached again; the message is one line."""


def wait(retry: int) -> float:
    """Seconds to wait before retry number `retry` (1, 2, ...)."""
    return FIRST_WAIT * 2 ** (retry - 1)


def resilient(engine: Engine) -> Engine:
    """`engine` with every statement sent again, on a new connection, when its connection is
    lost while the statement runs in autocommit (up to `RETRIES` times)."""

    @db.event.listens_for(engine, "do_execute")
    def _execute(cursor, statement, parameters, context) -> bool:
        return _retried(engine, context, cursor, lambda c: c.execute(statement, parameters))

    @db.event.listens_for(engine, "do_execute_no_params")
    def _execute_no_params(cursor, statement, context) -> bool:
        return _retried(engine, context, cursor, lambda c: c.execute(statement))

    return engine


@contextmanager
def connection(engine: Engine) -> Iterator[Connection]:
    """A connection of `engine` (what dagster-postgres' `create_pg_connection` gives), taken
    with `RETRIES` retries."""
    conn = _taken(engine)
    try:
        yield conn
    finally:
        conn.close()


def _taken(engine: Engine) -> Connection:
    for retried in range(RETRIES + 1):
        if retried:
            time.sleep(wait(retried))
        try:
            return engine.connect()
        except db_exc.DBAPIError as error:
            if retried == RETRIES or not may_reconnect(error.orig):
                raise db_exc.OperationalError(
                    None, None, lost(engine, error.orig, retried)
                ) from None
    raise AssertionError("unreachable")


def _retried(engine: Engine, context, cursor, execute) -> bool:
    """Run `execute` on the statement's cursor; on a lost connection, on a new one."""
    connection, retried, error = context.root_connection, 0, None
    autocommit = bool(getattr(connection.connection.dbapi_connection, "autocommit", False))
    while True:
        try:
            if cursor is None:
                cursor = context.cursor = _reconnected(connection)
            execute(cursor)
            return True
        except db_exc.ResourceClosedError:
            # a connection that cannot be replaced (SQLAlchemy's first look at a new one):
            # taking a connection fails, and is retried where it is taken (`connection`)
            if error is None:
                raise
            raise error from None
        except (psycopg2.Error, db_exc.DBAPIError) as raised:
            error = getattr(raised, "orig", raised)
            if not _is_lost(engine, connection, error, cursor):
                raise
            if not autocommit:
                raise lost(engine, error, retried, IN_TRANSACTION) from None
            if retried == RETRIES or not may_reconnect(error):
                raise lost(engine, error, retried) from None
        retried += 1
        cursor = None
        time.sleep(wait(retried))


def whole[T](check: Callable[[], T]) -> T:
    """`check` (a read of the schema: Dagster's column and table checks) run again whole,
    `RETRIES` times, when its connection is lost. SQLAlchemy 2.0 reads a reflection query's
    rows lazily while it sends the next statement on the same connection: when that
    statement's connection is replaced (`_retried`), the first one's cursor is gone ("cursor
    already closed"), and only the whole read can be sent again."""
    for retried in range(RETRIES + 1):
        if retried:
            time.sleep(wait(retried))
        try:
            return check()
        except (psycopg2.InterfaceError, db_exc.InterfaceError) as error:
            cause = getattr(error, "orig", error)
            if retried == RETRIES or not _DIALECT.is_disconnect(cause, None, None):
                raise
    raise AssertionError("unreachable")


def _reconnected(connection: Connection):
    """A cursor on a new connection in place of the lost one (SQLAlchemy's recipe)."""
    if not connection.invalidated:
        connection.invalidate()
    connection.rollback()  # the ended transaction, or the connection cannot be revalidated
    return connection.connection.cursor()


def _is_lost(engine: Engine, connection: Connection, error, cursor) -> bool:
    if isinstance(error, psycopg2.errors.ReadOnlySqlTransaction):
        # A failover's standby or demoted primary kept the address or the connection: a new
        # connection may reach the new primary, and the statement was not applied.
        return True
    if cursor is None:  # reconnecting failed
        return isinstance(error, psycopg2.OperationalError)
    raw = None if connection.invalidated else connection.connection.dbapi_connection
    return engine.dialect.is_disconnect(error, raw, cursor)


def may_reconnect(error: Exception | str) -> bool:
    """Whether waiting may mend what `error` (or a line naming it) says: not a `PERMANENT`."""
    return not any(marker in str(error) for marker in PERMANENT)


class _Lost(psycopg2.OperationalError):
    """A connection lost for good, in the one line `lost` writes."""


class _LostInTransaction(_Lost):
    """A connection lost in the middle of a transaction: the whole of it may be sent again."""


IN_TRANSACTION = "in a transaction: not retried"


def _cut(engine: Engine, error: Exception) -> bool:
    """Whether `error` cut a transaction (which may be sent again), not ended the retries."""
    orig = getattr(error, "orig", error)
    if isinstance(orig, _Lost):
        return isinstance(orig, _LostInTransaction)
    if isinstance(error, db_exc.DBAPIError):
        return bool(error.connection_invalidated)
    return engine.dialect.is_disconnect(orig, None, None)  # psycopg2's own, setting up


def lost(engine: Engine, error, retried: int, note: str = "") -> _Lost:
    """The error a lost connection ends with: `LOST: <cause> (<URL>; <what was tried>)`."""
    url = engine.url
    cause = getattr(error, "cause", None) or _first_line(str(error))
    if url.password:
        cause = cause.replace(str(url.password), "***")
    tried = note or (f"retried {retried} time{'s' * (retried != 1)}" if retried else "")
    where = url.render_as_string(hide_password=True) + (f"; {tried}" if tried else "")
    kind = _LostInTransaction if note == IN_TRANSACTION else _Lost
    raised = kind(f"{LOST}: {cause} ({where})")
    raised.cause = cause
    return raised


class Writes:
    """What a transaction that only writes (its statements' results unused: Dagster's asset
    index rows for an event) sends, kept until its block ends and then sent in one
    transaction; sent again whole, on a new connection, when that is lost (the server rolled
    back the cut one). A commit whose answer was lost may be applied twice."""

    def __init__(self) -> None:
        self.statements: list[tuple] = []

    def execute(self, statement, *parameters) -> None:
        self.statements.append((statement, *parameters))

    def in_transaction(self) -> bool:
        return True

    def commit(self, engine: Engine) -> None:
        for retried in range(RETRIES + 1):
            if retried:
                time.sleep(wait(retried))
            try:
                with connection(engine) as conn:
                    conn = conn.execution_options(isolation_level="READ COMMITTED")
                    with conn.begin():
                        for statement in self.statements:
                            conn.execute(*statement)
                return
            except (db_exc.DBAPIError, psycopg2.OperationalError, psycopg2.InterfaceError) as error:
                if not _cut(engine, error):
                    raise
                if retried == RETRIES:
                    cause = getattr(error, "orig", error)
                    raise db_exc.OperationalError(
                        None, None, lost(engine, cause, retried)
                    ) from None


_DIALECT = db.create_engine("postgresql+psycopg2://").dialect
"""What tells a lost connection from psycopg2's message (SQLAlchemy's list); connects nowhere."""


def _first_line(text: str) -> str:
    """The cause in a psycopg2 message: its first non-empty line, spaces folded, without the
    server's `FATAL:` severity or SQLAlchemy's `(psycopg2.OperationalError)` prefix."""
    line = next((s for s in text.splitlines() if s.strip()), text)
    line = re.sub(r"^\s*([A-Za-z_]\w*\.)+[A-Za-z_]\w*: ", "", line)  # a traceback's class
    line = re.sub(r"^\s*\(psycopg2(\.\w+)+\)\s*", "", line)
    return " ".join(line.replace("FATAL:", "").split())


def fault_line(message: str, cls_name: str = "", where: str = "") -> str | None:
    """The one line saying an error (its class name, its message) is a lost PostgreSQL
    connection: the `LOST: ...` line `lost` wrote, or, for a disconnect psycopg2 reported
    outside these retries (Dagster's own engines), its cause and `where` (a masked URL);
    None for anything else."""
    start = message.find(f"{LOST}: ")
    if start >= 0:
        return message[start:].splitlines()[0].strip()
    if cls_name not in ("OperationalError", "InterfaceError"):
        return None
    refused = "connection to server at" in message  # libpq's words for a failed connect
    if not refused and not _DIALECT.is_disconnect(psycopg2.OperationalError(message), None, None):
        return None
    return f"{LOST}: {_first_line(message)}" + (f" ({where})" if where else "")


def database_fault(exc: BaseException, where: str = "") -> str | None:
    """`fault_line` of `exc` or of what caused it; None when none is a lost connection."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        line = fault_line(str(error), type(error).__name__, where)
        if line is not None:
            return line
        error = error.__cause__ or error.__context__
    return None
