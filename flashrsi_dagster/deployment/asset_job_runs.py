"""A run launched from the UI, made again as the home runs its own: under the job its assets
share, and with the home's executor.

**Under its assets' job.** Dagster's UI materializes an asset, a partition of it or a backfill
of its partitions under the first job every selected asset belongs to, in name order
(`getCommonJob` in the UI's `LaunchAssetExecutionButton`; the code server sorts each asset's
`job_names`), and `__ASSET_JOB` sorts before every lowercase name; a backfill of assets runs
there too. Dagster has no way to leave assets out of that job. So the run queue
(`run_queue.RunQueue`), which every launch passes, makes the run again under the assets' own
job before it waits: same selection, checks, partition, config and tags, and deletes the
launched one. The Runs list and the asset's page then name the algorithm's job, and the run
executes with its executor.

**With the home's executor.** The sensor's and `flashrsi run`'s runs carry the home's
`execution.yaml` (Celery workers, containers: `execution.py`); a run launched from the
Launchpad or an asset page carries only what its form held, and would run its steps in its
run worker. A run of a partition (an algorithm's round or finalize job) whose config names no
executor is given the home's (and the home's path for the resources, where its config sets
none); one that names an executor keeps it.

The new run has an id of its own: the UI links to the run the queue returns (its toast, the
backfill's runs by their tag), and the deleted run's planned checks stay in Dagster's check
history as skipped (Dagster's reading of a planned check whose run was deleted); reusing the
id would leave each check planned twice, which fails the run."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from flashrsi_dagster.orchestration.dagster_internals import (
    IMPLICIT_ASSET_JOB_NAME,
    PARTITION_NAME_TAG,
    BaseWorkspaceRequestContext,
    JobSubsetSelector,
    make_new_run_id,
)

logger = logging.getLogger("flashrsi.jobs")


def as_home_runs(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    workspace: BaseWorkspaceRequestContext | None,
    home: Path,
) -> dg.DagsterRun:
    """`run` made again (with an id of its own, `run` deleted) under the one visible job its
    assets share, where it was launched under the hidden asset job, and with the home's
    executor, where its config names none; `run` itself when neither applies, for a
    re-execution (it keeps its parent's job and config), or when the job refuses its selection
    or config (said in the run's log: it then runs as launched). A home's `execution.yaml`
    that does not load raises its `ConfigError`."""
    if workspace is None or run.parent_run_id or run.op_selection:
        return run
    job = run.job_name
    if job == IMPLICIT_ASSET_JOB_NAME:
        job = shared_job(workspace, run) or job
    config = run.run_config
    if PARTITION_NAME_TAG in run.tags:  # a round's or a finalize job's: the flashrsi executor
        config = with_home_executor(config, home)
    if job == run.job_name and config == run.run_config:
        return run
    try:
        return _recreate(instance, run, workspace, job, config)
    except dg.DagsterError as exc:
        instance.report_engine_event(f"runs as launched, not under `{job}`: {exc}", run)
        logger.warning("run %s stays under %s: %s", run.run_id, run.job_name, exc)
        return run


def with_home_executor(run_config: Mapping[str, Any], home: Path) -> Mapping[str, Any]:
    """`run_config` with the home's executor and resources where it names no executor (its
    own resources' settings kept); `run_config` itself otherwise."""
    # Imported here: the instance loads this module, and the executors import Celery's and
    # Docker's Dagster libraries.
    from flashrsi_dagster.deployment.execution import home_run_config

    if "execution" in run_config:
        return run_config
    ours = home_run_config(home)
    if not ours:
        return run_config
    resources = {**ours["resources"], **(run_config.get("resources") or {})}
    return {**run_config, "execution": ours["execution"], "resources": resources}


def shared_job(workspace: BaseWorkspaceRequestContext, run: dg.DagsterRun) -> str | None:
    """The one job, other than Dagster's hidden ones, that every asset of `run` (selected, or
    checked by a selected check) belongs to; None if none or several."""
    keys = {*(run.asset_selection or ()), *(c.asset_key for c in run.asset_check_selection or ())}
    graph = workspace.asset_graph
    if not keys or not all(graph.has(key) for key in keys):
        return None
    shared = set.intersection(*(set(graph.get_materialization_job_names(k)) for k in keys))
    visible = [name for name in shared if not name.startswith(IMPLICIT_ASSET_JOB_NAME)]
    return visible[0] if len(visible) == 1 else None


def _recreate(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    workspace: BaseWorkspaceRequestContext,
    job: str,
    run_config: Mapping[str, Any],
) -> dg.DagsterRun:
    """The run made again under `job` with `run_config` (its plan made by the code location
    first, so a refusal leaves the run as it was), then the launched one deleted."""
    origin = run.remote_job_origin.repository_origin  # type: ignore[union-attr]
    selector = JobSubsetSelector(
        location_name=origin.code_location_origin.location_name,
        repository_name=origin.repository_name,
        job_name=job,
        op_selection=None,
        asset_selection=run.asset_selection,
        asset_check_selection=run.asset_check_selection,
    )
    remote = workspace.get_code_location(selector.location_name).get_job(selector)
    plan = workspace.get_execution_plan(remote, run_config, None, None)
    moved = instance.create_run(
        job_name=job,
        run_id=make_new_run_id(),
        run_config=run_config,
        status=dg.DagsterRunStatus.NOT_STARTED,
        tags=run.tags,
        root_run_id=None,
        parent_run_id=None,
        step_keys_to_execute=plan.execution_plan_snapshot.step_keys_to_execute,
        execution_plan_snapshot=plan.execution_plan_snapshot,
        job_snapshot=remote.job_snapshot,
        parent_job_snapshot=remote.parent_job_snapshot,
        asset_selection=run.asset_selection,
        asset_check_selection=run.asset_check_selection,
        resolved_op_selection=None,
        op_selection=None,
        remote_job_origin=remote.get_remote_origin(),
        job_code_origin=remote.get_python_origin(),
        asset_graph=workspace.asset_graph,
    )
    instance.delete_run(run.run_id)
    how = [f"under `{job}`"] if job != run.job_name else []
    if run_config != run.run_config:
        how.append(f"with the home's executor ({next(iter(run_config['execution']['config']))})")
    said = f"launched as run {run.run_id} of {run.job_name}; made again {' '.join(how)}"
    instance.report_engine_event(said, moved)
    return moved
