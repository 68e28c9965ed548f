"""Where a run's steps execute, chosen per run in its run config, as with Dagster's own
default executor:

    execution:
      config:
        in_process: {}          # the default: the run's own process
        multiprocess: {...}     # a process per step, on the run's machine
        celery: {...}           # a Celery task per step, on any worker reaching the broker
        docker: {...}           # a container per step, of the code location's image

Every algorithm's jobs carry this one executor, so a round can move to other workers (see
docs/scaling-out/celery.md) without a second set of jobs; each choice delegates to Dagster's own
executor of that name, with its own config schema and its own requirements (a multi-process
executor needs a persistent instance and a reconstructable job)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import dagster as dg
from dagster_celery import celery_executor
from dagster_docker import docker_executor

from flashrsi_dagster.orchestration.dagster_internals import Executor, InitExecutorContext
from flashrsi_dagster.orchestration.owner import beating, die_with_driver

EXECUTORS: dict[str, dg.ExecutorDefinition] = {
    "in_process": dg.in_process_executor,
    "multiprocess": dg.multiprocess_executor,
    "celery": celery_executor,  # workers: `flashrsi worker` (deployment/workers.py)
    "docker": docker_executor,  # config: deployment/containers.py renders it for a home
}
DEFAULT = "in_process"
"""A round's steps share one process: a step per subprocess costs more than a round does."""


def _chosen(config: Mapping[str, object]) -> tuple[dg.ExecutorDefinition, Mapping[str, object]]:
    (name, own), *_ = config.items()
    return EXECUTORS[name], own or {}  # type: ignore[return-value]


def _requirements(config: Mapping[str, object]):
    executor, own = _chosen(config)
    return executor.get_requirements(own)


@dg.executor(
    name="flashrsi",
    config_schema=dg.Field(
        dg.Selector({name: e.config_schema.as_field() for name, e in EXECUTORS.items()}),
        default_value={DEFAULT: {}},
    ),
    requirements=_requirements,
)
def flashrsi_executor(init_context: InitExecutorContext):
    executor, own = _chosen(init_context.executor_config)
    creation = executor.executor_creation_fn
    assert creation is not None, f"{executor.name} has no creation function"
    with warnings.catch_warnings():  # docker_executor is beta in dagster-docker 0.29
        warnings.simplefilter("ignore", dg.BetaWarning)
        chosen = creation(init_context._replace(executor_def=executor, executor_config=own))
    return Watched(chosen)


class Watched(Executor):
    """The chosen executor, run by a process that says it lives: it tags the run with its
    process and a heartbeat (`owner.py`) for as long as it orchestrates the run, so a run whose
    worker died is told from one that runs. Created and run only in the process that
    orchestrates the run (a step process never makes the run's executor)."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        # what an executor's loop asks of its own executor (Celery's `app_args`)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def retries(self):
        return self.inner.retries

    @property
    def step_dependency_config(self):
        return self.inner.step_dependency_config

    def execute(self, plan_context, execution_plan):
        die_with_driver()
        with beating(plan_context.instance, plan_context.run_id):
            yield from self.inner.execute(plan_context, execution_plan)
