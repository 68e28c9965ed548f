"""One step of an experiment as an in-process run of its algorithm's job, requested through
the same step -> run mapping as the sensor, so the run belongs to the named job (the UI lists
it under that job) and carries the same tags and run key. Where the home's `execution.yaml`
sends steps elsewhere (`deployment/execution.py`), the run is orchestrated here and its steps go to
that executor, with the job loaded from its code location as the workers load it."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import dagster as dg

from flashrsi_dagster.algorithms.base import Step
from flashrsi_dagster.deployment.definitions import build_definitions
from flashrsi_dagster.deployment.execution import home_run_config, runs_elsewhere
from flashrsi_dagster.deployment.failures import raise_integrity_failure, root_cause
from flashrsi_dagster.orchestration.algorithm_defs import defs_for
from flashrsi_dagster.orchestration.dagster_internals import (
    ReconstructableRepository,
    make_new_run_id,
    merge_run_tags,
)
from flashrsi_dagster.orchestration.owner import beating, this_process

REPOSITORY_LABEL = {".dagster/repository": "__repository__@flashrsi_dagster.definitions"}
"""The tag the UI lists a job's runs by (repository @ code location, as `flashrsi ui` and
workspace.yaml load it). Dagster sets it only on runs launched from a code location; without
it an in-process run is missing from its job's Runs tab."""

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
"""In-process runs log their events to the instance (the UI shows them); the terminal gets
only warnings, so the CLI's own progress lines stay readable."""


class InProcessRuns:
    """Runs steps of the experiments under one home on `instance`, in this process."""

    def __init__(
        self,
        instance: dg.DagsterInstance,
        home: str,
        parts: dict[str, dg.ConfigurableResource] | None = None,
    ) -> None:
        self.instance, self.home = instance, home
        self.definitions = build_definitions(home, **(parts or {}))

    def execute(
        self, algorithm: str, name: str, step: Step, tags: Mapping[str, str] | None = None
    ) -> bool:
        """Run one step; True when Dagster reports success. A step refused because the
        records fail their integrity check raises that `IntegrityError` here, so the caller
        can name the files instead of pointing at a failed run; see `failure` for why
        another step failed; `tags`: more tags for the run (its endpoints)."""
        request = defs_for(algorithm).request(name, step, tags)
        assert request is not None and request.job_name, f"{step.describe()} is not a run"
        job = self.definitions.resolve_job_def(request.job_name)
        tags = {
            **request.tags,
            **REPOSITORY_LABEL,
            **this_process(),
            "dagster/run_key": request.run_key or "",
        }
        run_config = {**QUIET, **home_run_config(self.home)}
        if runs_elsewhere(run_config):
            result = _execute_from_code_location(self.instance, job, request, tags, run_config)
        else:  # `in_process` chosen or none: the run is this process, whatever it says
            run_config.pop("execution", None)
            run_id = make_new_run_id()
            with beating(self.instance, run_id, tag=False):  # for a driver on another host
                result = job.execute_in_process(
                    instance=self.instance,
                    partition_key=request.partition_key,
                    tags=tags,
                    asset_selection=request.asset_selection,
                    raise_on_error=False,
                    run_config=run_config,
                    run_id=run_id,
                )
        failures = result.get_step_failure_events()
        raise_integrity_failure(failures)
        self.failure = None if result.success else root_cause(failures)
        return result.success

    failure: str | None = None
    """Why the last step failed, in one line: the innermost error's message."""


CODE_LOCATION = ("flashrsi_dagster.definitions", "defs")
"""Where a worker loads a job from (workspace.yaml's module): the run's resources are bound
to the default home there, so the run config names the real one."""


def _execute_from_code_location(
    instance: dg.DagsterInstance,
    job: dg.JobDefinition,
    request: dg.RunRequest,
    tags: dict[str, str],
    run_config: dict,
) -> dg.JobExecutionResult:
    """The step's run with the executor its run config chooses (steps in other processes or
    on other machines); `parts` given to `InProcessRuns` do not reach them."""
    repository = ReconstructableRepository.for_module(*CODE_LOCATION, working_directory=None)
    tags = merge_run_tags(
        job_def=job,
        partition_key=request.partition_key,
        tags=tags,
        asset_selection=request.asset_selection,
        instance=instance,
        run_config=run_config,
    )
    with warnings.catch_warnings():
        # dagster-celery registers its step task anew for every step it submits
        warnings.filterwarnings("ignore", message="Task name 'execute_plan' is already")
        return dg.execute_job(
            repository.get_reconstructable_job(job.name),
            instance=instance,
            run_config=run_config,
            tags=tags,
            asset_selection=request.asset_selection,
        )
