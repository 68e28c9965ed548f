"""`flashrsi worker`: a Celery worker that executes the steps a home's runs send to the broker
(`<home>/execution.yaml`, `celery:`), on any machine that reaches the broker, the run storage
and the experiment home at the same path.

What it adds to `dagster-celery worker start -A dagster_celery.app -y FILE`: it reads the same
file as the runs, so both agree on the broker, the queue (`config_source.task_default_queue`)
and the delivery settings (`execution.CELERY_DELIVERY`, which the runs also carry); it resolves
`{env: VAR}` in memory, where `dagster-celery worker start` writes the resolved broker URL into
a Python module under the instance folder; and it runs one step at a time in the worker's own
process (Celery's `solo` pool), so killing the worker kills its step, and the broker hands the
step to another worker. More steps at once: more workers.

`flashrsi worker` itself supervises that Celery process (`python -m` this module), a process
group of its own dying with it (`reaper.Group`): a stop signal to `flashrsi worker` alone
reaches Celery as SIGTERM (its warm shutdown: the step under way may finish), and what is
left after `lifecycle.GRACE` is killed, the step then handed to another worker."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

from dagster_celery import celery_executor
from dagster_celery.config import DEFAULT_CONFIG
from dagster_celery.executor import CeleryExecutor
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_task

from flashrsi_dagster import lifecycle
from flashrsi_dagster.config import ConfigError
from flashrsi_dagster.config.errors import Problem
from flashrsi_dagster.deployment.execution import executor_config, settings_file
from flashrsi_dagster.deployment.instance import COMMANDS, instance_dir
from flashrsi_dagster.deployment.reaper import Group
from flashrsi_dagster.lifecycle import Record, Stoppable, say
from flashrsi_dagster.orchestration.dagster_internals import post_process_config


def celery_settings(home: str | Path) -> dict:
    """The home's Celery executor config with `{env: VAR}` resolved and defaults filled in."""
    path = settings_file(home)
    executor = executor_config(home)
    if executor is None or "celery" not in executor:
        found = "no such file" if executor is None else f"it chooses {next(iter(executor))!r}"
        raise ConfigError(path, [Problem("celery", f"a worker needs this executor ({found})")])
    resolved = post_process_config(celery_executor.config_schema.config_type, executor["celery"])
    if not resolved.success:  # e.g. a variable that `{env: VAR}` names is not set
        problems = [
            Problem(".".join(["celery", *e.stack.levels]), _reason(e.message))
            for e in resolved.errors or []
        ]
        raise ConfigError(path, problems)
    return resolved.value  # type: ignore[return-value]


def _reason(message: str) -> str:
    """Dagster's post-processing error in one line (it appends a stack trace)."""
    found = re.search(r"PostProcessingError: (.*)", message)
    return found.group(1) if found else message.splitlines()[0]


def celery_app(home: str | Path):
    """The Celery app of the home's runs, with Dagster's step task registered, and its queue."""
    settings = celery_settings(home)
    keys = ("broker", "backend", "include", "config_source")
    app = make_app(CeleryExecutor.for_cli(**{k: settings.get(k) for k in keys}).app_args())
    create_task(app)
    queue = (settings.get("config_source") or {}).get(
        "task_default_queue", DEFAULT_CONFIG["task_default_queue"]
    )
    return app, queue


def supervise(home: str | Path, name: str | None = None, loglevel: str = "INFO") -> int:
    """Run a worker (`serve`, in a child) until a stop signal or its end; returns its exit
    status, or 128 + the signal's number. A bad `execution.yaml` raises `ConfigError` here,
    before anything starts."""
    celery_settings(home)
    record = Record(instance_dir(Path(home)) / COMMANDS, "worker", name or "", say=say)

    def start(started: list[Stoppable]) -> int:
        args = [sys.executable, "-m", __name__, str(home), name or "", loglevel]
        started.append(celery := Group(args, "celery worker", signal.SIGTERM, to_group=False))
        record.add(celery.name, celery.leader.pid)
        return celery.leader.wait()

    return lifecycle.supervise(record, start)


def serve(home: str | Path, name: str | None = None, loglevel: str = "INFO") -> None:
    """Run a worker in this process until it is stopped (SIGTERM: it finishes its step first)."""
    app, queue = celery_app(home)
    # The runs' instance reference may name the home's own instance folder ({env: DAGSTER_HOME})
    os.environ.setdefault("DAGSTER_HOME", str(instance_dir(Path(home)).resolve()))
    argv = ["worker", "--pool=solo", "--prefetch-multiplier=1", f"--queues={queue}"]
    argv += [f"--loglevel={loglevel}", "--without-gossip", "--without-mingle"]
    if name:
        argv.append(f"--hostname={name}")
    app.worker_main(argv)


if __name__ == "__main__":  # `supervise`'s child: home, name ("" for Celery's), log level
    serve(sys.argv[1], sys.argv[2] or None, sys.argv[3])
