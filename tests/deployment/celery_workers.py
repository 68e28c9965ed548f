"""A home whose runs send their steps to Celery over the machine's real RabbitMQ, with its
Dagster instance on a fresh PostgreSQL database, and `flashrsi worker` processes started for
it and stopped afterwards. Each home has a queue of its own, so a stray worker never takes
another test's steps; the queue is deleted afterwards. Where no broker answers, the tests that
need one are skipped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from kombu import Connection

from tests.conftest import PATIENCE

BROKER = os.environ.get("FLASHRSI_TEST_BROKER", "pyamqp://guest:guest@127.0.0.1:5672//")
FLASHRSI = str(Path(sys.executable).parent / "flashrsi")
ENV = {"FLASHRSI_TEST_CELERY_BROKER": BROKER}
"""What the home's files refer to (`{env: ...}`); the values are never written there."""


def _why_no_broker() -> str | None:
    try:
        with Connection(BROKER, connect_timeout=3) as connection:
            connection.ensure_connection(max_retries=1)
    except Exception as exc:  # kombu raises the transport's own errors
        return f"no Celery broker at {Connection(BROKER).as_uri()}: {exc}"
    return None


_NO_BROKER = _why_no_broker()
needs_broker = pytest.mark.skipif(_NO_BROKER is not None, reason=_NO_BROKER or "")


def celery_home(home: Path) -> str:
    """Write the home's instance settings (PostgreSQL) and `execution.yaml` (Celery), both
    referring to the `environment`; returns the home's own queue."""
    queue = f"flashrsi-test-{uuid.uuid4().hex[:8]}"
    (home / ".dagster").mkdir(parents=True)
    (home / ".dagster" / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\n"
        "storage:\n  postgres:\n    postgres_url:\n      env: FLASHRSI_TEST_DATABASE\n"
    )
    (home / "execution.yaml").write_text(
        "celery:\n  broker: {env: FLASHRSI_TEST_CELERY_BROKER}\n"
        f"  config_source: {{task_default_queue: {queue}}}\n"
    )
    return queue


def environment(database_url: str) -> dict[str, str]:
    return {**ENV, "FLASHRSI_TEST_DATABASE": database_url}


@dataclass
class Worker:
    name: str
    process: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def celery_pid(self) -> int:
        """The Celery worker process that `flashrsi worker` supervises, where steps run."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        return next(
            int(child)
            for child in children
            if b"deployment.workers" in Path(f"/proc/{child}/cmdline").read_bytes()
        )


@contextmanager
def workers(home: Path, queue: str, env: dict[str, str], count: int = 2) -> Iterator[list[Worker]]:
    """`count` worker processes serving the home, ready when yielded, stopped afterwards."""
    started: list[Worker] = []
    try:
        for k in range(count):
            name = f"w{k}-{queue}@%h"
            log = home.parent / f"worker-{k}.log"
            command = [FLASHRSI, "worker", "--home", str(home), "--name", name]
            with log.open("w") as out:
                process = subprocess.Popen(
                    command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}
                )
            started.append(Worker(name.split("@")[0], process, log))
        for worker in started:
            _wait_ready(worker)
        yield started
    finally:
        for worker in started:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        for worker in started:
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
        _drop_queue(queue)


def _drop_queue(queue: str) -> None:
    """The broker as the test found it: the home's queue goes with its workers."""
    with Connection(BROKER, connect_timeout=3) as connection:
        connection.default_channel.queue_delete(queue)


def _wait_ready(worker: Worker, timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if " ready." in worker.log.read_text():
            return
        if worker.process.poll() is not None:
            raise AssertionError(f"worker {worker.name} exited:\n{worker.log.read_text()}")
        time.sleep(0.2)
    raise AssertionError(f"worker {worker.name} not ready in {timeout} s")
