"""Where a home's runs execute their steps: `<home>/execution.yaml`, the `execution` section
of Dagster run config for the algorithms' executor (`orchestration/executors.py`), e.g.

    celery:
      broker: {env: FLASHRSI_CELERY_BROKER}     # a URL may hold a password: never written here
      config_source: {task_default_queue: flashrsi}

Without the file a run executes where it is launched (`in_process`), as before. With it,
every run the sensor requests and every step `flashrsi run` / `resume` takes carries this
executor config, and the experiment home as an absolute path for the resources (a worker
started in another folder finds the same home: it must be mounted at the same path there).
`flashrsi worker` starts a Celery worker from the same file, so runs and workers agree on the
broker, the queue and the delivery settings.

The file is checked with Dagster's own config validation of the executor's schema; a problem
names the file and the key path. Values stay as written: `{env: VAR}` is resolved by Dagster
in the process that runs the step, never written out resolved."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from flashrsi_dagster.bounded_yaml import safe_load
from flashrsi_dagster.config import ConfigError
from flashrsi_dagster.config.errors import Problem
from flashrsi_dagster.orchestration.dagster_internals import validate_config
from flashrsi_dagster.orchestration.executors import DEFAULT, flashrsi_executor

FILE = "execution.yaml"

CELERY_DELIVERY = {"task_acks_late": True, "task_reject_on_worker_lost": True}
"""A step's task is acknowledged when it ends, not when a worker takes it: a worker that dies
mid-step (SIGKILL, a lost machine) leaves the task on the broker, which hands it to another
worker. The step runs again from its start; its records are written atomically, so the dead
worker's half never counts."""


def settings_file(home: str | Path) -> Path:
    return Path(home) / FILE


def executor_config(home: str | Path) -> dict[str, Any] | None:
    """The home's `execution` config (one executor name -> its config), checked, with the
    Celery delivery settings filled in; None without the file."""
    path = settings_file(home)
    if not path.is_file():
        return None
    try:
        value = safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(path, [Problem("", f"not valid YAML: {exc}")]) from None
    _check(path, value)
    return _with_delivery(value)


def _check(path: Path, value: object) -> None:
    schema = flashrsi_executor.config_schema.config_type
    result = validate_config(schema, value)
    if result.success:
        return
    problems = [Problem(".".join(e.stack.levels), e.message) for e in result.errors or []]
    raise ConfigError(path, problems)


def _with_delivery(value: Mapping[str, Any]) -> dict[str, Any]:
    (name, own), *_ = value.items()
    own = dict(own or {})
    if name == "celery":
        own["config_source"] = {**CELERY_DELIVERY, **(own.get("config_source") or {})}
    return {name: own}


def home_run_config(home: str | Path) -> dict[str, Any]:
    """The run config every run of the home's experiments adds: the executor and the home's
    absolute path for the resources; empty without `execution.yaml` (steps in the run's own
    process, today's runs unchanged)."""
    executor = executor_config(home)
    if executor is None:
        return {}
    return {"execution": {"config": executor}, "resources": home_resources(home)}


def home_resources(home: str | Path) -> dict[str, Any]:
    """The resources' config naming the home by its absolute path: a run loaded from the code
    location (a queued run's worker, a Celery worker) would otherwise bind `.flashrsi` beside
    its folder, whatever the home's name."""
    root = {"config": {"home": str(Path(home).resolve())}}
    return {"experiments_home": root, "io_manager": root}


def runs_elsewhere(run_config: Mapping[str, Any]) -> bool:
    """Whether the run config sends steps out of the launching process (so the job must be
    loaded from its code location rather than executed in process)."""
    chosen = run_config.get("execution", {}).get("config", {DEFAULT: {}})
    return next(iter(chosen)) != "in_process"
