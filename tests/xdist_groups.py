"""What may run side by side under pytest-xdist (`make test`: `-n auto --dist loadgroup`).

Each test file goes to one worker whole, so a module-scoped fixture (one experiment that many
tests read) is made once, as in a serial run. Every file with a test on the Docker engine
goes to the same worker: `docker_engine` is a session fixture that starts one `dockerd` on a
fixed socket and data root, and stops it when that worker's session ends.

Everything else two workers share is already made unique per test: PostgreSQL databases
(`fresh_database`), RabbitMQ queues (`celery_home`), ports (bound to 0), temp folders
(`tmp_path`, `scratch`), and the sleepers the sabotage tests look for (`helpers.unique`).
Serially (`.venv/bin/pytest`, no `-n`) the marks change nothing."""

from __future__ import annotations

import pytest

DOCKER = "docker-engine"
ENGINE_FIXTURES = {"docker_engine", "code_image"}


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    on_engine = {_file(i) for i in items if ENGINE_FIXTURES & set(i.fixturenames)}
    for item in items:
        group = DOCKER if _file(item) in on_engine else _file(item)
        item.add_marker(pytest.mark.xdist_group(group))
