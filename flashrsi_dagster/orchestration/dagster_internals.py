"""Every name the project takes from Dagster's private modules (`dagster._…`), in one place.

Dagster does not promise these across releases; each was checked against the version in
`CHECKED_AGAINST` (a test fails when the installed one differs, so an upgrade re-checks them
here, not in nine files). Why each is needed:
- executors: a custom `Executor` (each step process in its own session, `executors.py`);
- tags: partition and run-key tag names the sensor and the queue read;
- storage: SQLite storage with a busy timeout and WAL, and PostgreSQL storage that reconnects
  (`deployment/storage.py`, `deployment/postgres.py`), with Alembic migrations Dagster ships;
- runs: in-process runs on the persistent instance (`deployment/in_process.py`), the queued
  coordinator and its daemon (`deployment/queued.py`, `deployment/run_queue.py`);
- config: validating a run config before launch (`deployment/execution.py`, `workers.py`);
- code server: Dagster's own server and command line, its run workers forked warm
  (`deployment/code_server.py`);
- checks: a check's result on a partition reported from another run (the promotion's)
  names the materialization it judged, or Dagster does not count it for that partition
  (`orchestration/describe.py`);
- asset job: a run the UI launched under the hidden asset job, made again under its assets'
  job as it is submitted (`deployment/asset_job_runs.py`).
"""

from dagster._config import StringSource, post_process_config, validate_config
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData as TargetMaterialization,
)
from dagster._core.definitions.assets.job.asset_job import IMPLICIT_ASSET_JOB_NAME
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.definitions.selector import JobSubsetSelector
from dagster._core.events import DagsterEventType
from dagster._core.execution.execute_in_process import merge_run_tags
from dagster._core.executor.base import Executor
from dagster._core.executor.init import InitExecutorContext
from dagster._core.run_coordinator import QueuedRunCoordinator, SubmitRunContext
from dagster._core.scheduler.instigation import InstigatorStatus, InstigatorType, TickStatus
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log import SqlEventLogStorageMetadata
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
    SqliteEventLogStorageWatchdog,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import get_alembic_config
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._core.storage.tags import (
    MULTIDIMENSIONAL_PARTITION_PREFIX,
    PARTITION_NAME_TAG,
    RUN_KEY_TAG,
)
from dagster._core.utils import make_new_run_id
from dagster._core.workspace.context import BaseWorkspaceRequestContext, WorkspaceProcessContext
from dagster._core.workspace.load_target import GrpcServerTarget
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import (
    QueuedRunCoordinatorDaemon,
)
from dagster._grpc.client import DagsterGrpcClient
from dagster._grpc.server import DagsterApiServer, wait_for_grpc_server
from dagster._serdes import ConfigurableClassData
from dagster._utils import find_free_port


def dagster_cli():
    """Dagster's command line (`dagster …`), imported only by the code server that runs it:
    every process loading the code location would pay for it otherwise."""
    from dagster._cli import cli

    return cli


CHECKED_AGAINST = "1.13.27"
"""The Dagster release every name above was read against."""

QUEUED_RUN_COORDINATOR_MODULE = "dagster._core.run_coordinator"
"""Where `dagster.yaml` finds Dagster's own queued coordinator (homes written before
`RunQueue`)."""

__all__ = [
    "CHECKED_AGAINST",
    "IMPLICIT_ASSET_JOB_NAME",
    "INDEX_SHARD_NAME",
    "MULTIDIMENSIONAL_PARTITION_PREFIX",
    "PARTITION_NAME_TAG",
    "QUEUED_RUN_COORDINATOR_MODULE",
    "RUN_KEY_TAG",
    "SQLITE_BUSY_TIMEOUT_SECONDS",
    "BaseWorkspaceRequestContext",
    "ConfigurableClassData",
    "DagsterApiServer",
    "DagsterEventType",
    "DagsterGrpcClient",
    "DagsterSqliteStorage",
    "DagsterStorage",
    "Executor",
    "GrpcServerTarget",
    "InitExecutorContext",
    "InstigatorStatus",
    "InstigatorType",
    "JobSubsetSelector",
    "QueuedRunCoordinator",
    "QueuedRunCoordinatorDaemon",
    "ReconstructableRepository",
    "SqlEventLogStorageMetadata",
    "SqliteEventLogStorage",
    "SqliteEventLogStorageWatchdog",
    "SqliteRunStorage",
    "SqliteScheduleStorage",
    "StringSource",
    "SubmitRunContext",
    "TargetMaterialization",
    "TickStatus",
    "WorkspaceProcessContext",
    "dagster_cli",
    "find_free_port",
    "get_alembic_config",
    "make_new_run_id",
    "merge_run_tags",
    "post_process_config",
    "sqlite_event_log",
    "validate_config",
    "wait_for_grpc_server",
]
