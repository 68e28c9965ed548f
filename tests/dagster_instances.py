"""The Dagster instances the tests run on: each test that makes one runs on SQLite and on the
machine's PostgreSQL server (a fresh database per test, dropped afterwards), through the
storage a home's instance gets (`deployment/postgres.py`).

- `dagster_instance`: a test instance (`dg.instance_for_test`) on each storage;
- `instance_on(storage)`: the same, inside a test (`storage` is the fixture's parameter);
- `sqlite_only`: a test's mark that keeps it on SQLite, where the storage is incidental;
- `home_storage`: for tests of a home's own instance (`instance_dir`, `flashrsi run`): the
  setting as a user gives it — `FLASHRSI_POSTGRES_URL` set to a fresh database's plain
  `postgresql://` URL, or unset for SQLite; the fixture's value is the URL or None."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
import pytest

from flashrsi_dagster.deployment.postgres import URL_ENV
from tests.postgres import fresh_database, needs_postgres

STORAGES = ["sqlite", pytest.param("postgres", marks=needs_postgres)]

sqlite_only = pytest.mark.parametrize("storage", ["sqlite"])
"""For a slow end-to-end test where the storage is incidental: its instance calls run on
PostgreSQL in a cheaper test, and a second run would add its whole time to the suite."""


def plain_url(url: str) -> str:
    """The URL as a user pastes it: no driver named."""
    return url.replace("postgresql+psycopg2://", "postgresql://", 1)


def postgres_settings(url: str) -> dict:
    """`dagster.yaml`'s storage section on `url`, as a home's instance has it (there the URL
    comes from the environment)."""
    config = {"postgres_url": plain_url(url)}
    return {
        "storage": {
            "custom": {
                "module": "flashrsi_dagster.deployment.postgres",
                "class": "PostgresStorage",
                "config": config,
            }
        }
    }


@contextmanager
def instance_on(storage: str, **kwargs) -> Iterator[dg.DagsterInstance]:
    """A test instance on `storage` (`sqlite`: Dagster's default in a temp folder)."""
    if storage == "sqlite":
        with dg.instance_for_test(**kwargs) as instance:
            yield instance
        return
    with (
        fresh_database() as url,
        dg.instance_for_test(overrides=postgres_settings(url), **kwargs) as instance,
    ):
        yield instance


@pytest.fixture(params=STORAGES)
def storage(request) -> str:
    return request.param


@pytest.fixture
def dagster_instance(storage: str) -> Iterator[dg.DagsterInstance]:
    with instance_on(storage) as instance:
        yield instance


@pytest.fixture
def home_storage(storage: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str | None]:
    if storage == "sqlite":
        monkeypatch.delenv(URL_ENV, raising=False)
        yield None
        return
    with fresh_database() as url:
        monkeypatch.setenv(URL_ENV, plain_url(url))
        yield plain_url(url)
