"""A run of assets launched under Dagster's hidden asset job (`__ASSET_JOB`), moved to the job
its assets share: their algorithm's round or finalize job.

Dagster's UI materializes an asset, a partition of it or a backfill of its partitions under the
first job every selected asset belongs to, in name order (`getCommonJob` in the UI's
`LaunchAssetExecutionButton`; the code server sorts each asset's `job_names`), and
`__ASSET_JOB` sorts before every lowercase name; a backfill of assets runs there too. Dagster
has no way to leave assets out of that job. So the run queue (`run_queue.RunQueue`), which
every launch passes, makes the run again under the assets' own job before it waits: same
selection, checks, partition, config and tags, and deletes the launched one. The Runs list and
the asset's page then name the algorithm's job, and the run executes with its executor.

The new run has an id of its own: the UI links to the run the queue returns (its toast, the
backfill's runs by their tag), and the deleted run's planned checks stay in Dagster's check
history as skipped (Dagster's reading of a planned check whose run was deleted); reusing the
id would leave each check planned twice, which fails the run."""

from __future__ import annotations

import logging

import dagster as dg

from flashrsi_dagster.orchestration.dagster_internals import (
    IMPLICIT_ASSET_JOB_NAME,
    BaseWorkspaceRequestContext,
    JobSubsetSelector,
    make_new_run_id,
)

logger = logging.getLogger("flashrsi.jobs")


def under_own_job(
    instance: dg.DagsterInstance, run: dg.DagsterRun, workspace: BaseWorkspaceRequestContext | None
) -> dg.DagsterRun:
    """`run` made again under the one visible job all its assets share (with an id of its own,
    `run` deleted); `run` itself when it is not a new launch of the hidden asset job (a
    re-execution keeps its parent's job), when its assets share no such job or several, or
    when that job refuses its selection or config (said in the run's log: it then runs as
    launched)."""
    if run.job_name != IMPLICIT_ASSET_JOB_NAME or workspace is None or run.parent_run_id:
        return run
    job = shared_job(workspace, run)
    if job is None:
        return run
    try:
        return _recreate(instance, run, workspace, job)
    except dg.DagsterError as exc:
        instance.report_engine_event(f"runs as launched, not under `{job}`: {exc}", run)
        logger.warning("run %s stays under %s: %s", run.run_id, run.job_name, exc)
        return run


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
) -> dg.DagsterRun:
    """The run made again under `job` (its plan made by the code location first, so a refusal
    leaves the run as it was), then the launched one deleted."""
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
    plan = workspace.get_execution_plan(remote, run.run_config, None, None)
    moved = instance.create_run(
        job_name=job,
        run_id=make_new_run_id(),
        run_config=run.run_config,
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
    said = f"launched as run {run.run_id} of {run.job_name}; made again under `{job}`"
    instance.report_engine_event(said, moved)
    return moved
