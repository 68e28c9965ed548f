"""The run queue of a home's Dagster instance: Dagster's `QueuedRunCoordinator`, with tag
concurrency limits per experiment and per model endpoint (the tags of `orchestration/tags.py`).

Every run launched through the queue (by the UI, a backfill, the round driver sensor, or
`flashrsi run` when a round has several candidates ready) waits there until the limits allow
it; a run counts against them from its launch to its end, however it was launched. The
driver's runs carry their tags from the start; a run launched from the UI or a backfill
carries only its partition, so the queue (`RunQueue`) gives every submitted run the tags its
partition implies — its experiment, and the endpoints of that experiment's roles — before it
waits: otherwise it would pass every limit but the total."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import yaml
from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.config import ConfigError
from flashrsi_dagster.deployment.asset_job_runs import as_home_runs
from flashrsi_dagster.experiment.identity import stored_config
from flashrsi_dagster.orchestration.context import EXPERIMENT_TAG
from flashrsi_dagster.orchestration.dagster_internals import (
    MULTIDIMENSIONAL_PARTITION_PREFIX,
    PARTITION_NAME_TAG,
    ConfigurableClassData,
    QueuedRunCoordinator,
    StringSource,
    SubmitRunContext,
)
from flashrsi_dagster.orchestration.tags import ENDPOINT_KEYS, endpoint_key, endpoint_tags

logger = logging.getLogger("flashrsi.jobs")

STARTUP_TIMEOUT = 600


class RunLimits(BaseModel):
    """How many runs of a home may be in progress at once. Written into the run queue's
    section of `<home>/.dagster/dagster.yaml` when the file is made; edit them there."""

    model_config = ConfigDict(extra="forbid")

    max_concurrent_runs: int = Field(
        8, ge=1, description="Runs in progress at once, over every experiment of the home."
    )
    per_experiment: int = Field(4, ge=1, description="Runs of one experiment at once.")
    per_endpoint: int = Field(
        8, ge=1, description="Runs calling one model endpoint at once (any role, any experiment)."
    )


def run_queue(limits: RunLimits) -> str:
    """The `run_coordinator` section of a `dagster.yaml` with these limits (and the time a
    code server may take to start)."""
    per_value = {"applyLimitPerUniqueValue": True}
    tag_limits = [{"key": EXPERIMENT_TAG, "value": per_value, "limit": limits.per_experiment}]
    tag_limits += [
        {"key": endpoint_key(n), "value": per_value, "limit": limits.per_endpoint}
        for n in range(1, ENDPOINT_KEYS + 1)
    ]
    section = {
        "run_coordinator": {
            "module": "flashrsi_dagster.deployment.run_queue",
            "class": "RunQueue",
            "config": {
                # a queued run waits 1 s at most for the next look (Dagster's default is 5 s)
                "dequeue_interval_seconds": 1,
                # a launch waits until its run worker has started (seconds: it imports the
                # code location); launched one by one, a round's candidates would start in turn
                "dequeue_use_threads": True,
                "dequeue_num_workers": limits.max_concurrent_runs,
                "max_concurrent_runs": limits.max_concurrent_runs,
                "tag_concurrency_limits": tag_limits,
            },
        },
        # the code server `flashrsi run` starts for queued runs imports the code location:
        # on a loaded machine that took more than Dagster's default 180 s
        "code_servers": {"local_startup_timeout": STARTUP_TIMEOUT},
    }
    return yaml.safe_dump(section, sort_keys=False)


class RunQueue(QueuedRunCoordinator):
    """Dagster's run queue, giving each run its limit tags (`limit_tags`) as it is submitted,
    and a run the UI launched under Dagster's hidden asset job its assets' own job
    (`asset_job_runs.py`): every launch — the UI's, a backfill's, the sensor's, the driver's —
    comes through here.

    Its config is Dagster's `QueuedRunCoordinator`'s plus `home`, the experiments folder
    (`{env: FLASHRSI_HOME}` where the processes that submit runs have it: a cluster's webserver
    and daemon, whose instance folder is not in the home); without it, the folder holding
    the instance (`<home>/.dagster`, as `flashrsi run` and `flashrsi ui` make it)."""

    def __init__(self, home: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._home = home

    @classmethod
    def config_type(cls) -> dict:
        home = dg.Field(
            StringSource,
            is_required=False,
            description="The experiments folder; default: the folder holding the instance's.",
        )
        return {**super().config_type(), "home": home}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> RunQueue:
        queue = super().from_config_value(inst_data, config_value)
        queue._home = config_value.get("home")
        return queue

    @property
    def home(self) -> Path:
        """The experiments folder whose configs give runs their limit tags."""
        if self._home:
            return Path(self._home)
        return Path(self._instance.root_directory).parent

    def submit_run(self, context: SubmitRunContext) -> dg.DagsterRun:
        home, run = self.home, context.dagster_run
        try:
            run = as_home_runs(self._instance, run, context.workspace, home)
            refused = _refused_start(home, run)
        except ConfigError as exc:  # the home's execution.yaml
            # Imported here: it loads the agents and benchmarks, which the instance must not.
            from flashrsi_dagster.validation import one_line

            refused = one_line(exc)
        context = SubmitRunContext(run, context.workspace)
        if refused is not None:  # failed with its one line, before a run worker starts
            self._instance.report_run_failed(run, refused)
            return self._instance.get_run_by_id(run.run_id) or run
        tags = limit_tags(home, run)
        if tags:
            self._instance.add_run_tags(run.run_id, tags)
            run = self._instance.get_run_by_id(run.run_id) or run
            context = SubmitRunContext(run, context.workspace)
        return super().submit_run(context)


def _refused_start(home: Path, run: dg.DagsterRun) -> str | None:
    """Why a `start_experiment` run cannot start (the code location runs in the folder
    holding the home); None for any other run."""
    if run.job_name != "start_experiment":
        return None
    # Imported here: the instance loads this module, which must not load every algorithm.
    from flashrsi_dagster.deployment.start import launch_problem

    return launch_problem(run.run_config, home.parent, home)


def limit_tags(home: Path, run: dg.DagsterRun) -> dict[str, str]:
    """The tags the run lacks (or carries wrong) for the limits: the experiment its partition
    names (a forged `flashrsi/experiment` is replaced) and the endpoints of its roles. None
    for a run of no experiment's partition."""
    name = _experiment_of(run)
    if name is None:
        return {}
    wanted = {EXPERIMENT_TAG: name, **_endpoints(home, name)}
    return {key: value for key, value in wanted.items() if run.tags.get(key) != value}


def _experiment_of(run: dg.DagsterRun) -> str | None:
    """The experiment of a round job's partition (its `experiment` dimension) or of a
    finalize job's (the partition is the experiment)."""
    # Imported here: the instance loads this module, which must not load every algorithm.
    from flashrsi_dagster.orchestration.algorithm_defs import all_defs

    name = run.tags.get(f"{MULTIDIMENSIONAL_PARTITION_PREFIX}experiment")
    if name is None and run.job_name in {d.finalize_job.name for d in all_defs().values()}:
        name = run.tags.get(PARTITION_NAME_TAG)
    return name


def _endpoints(home: Path, name: str) -> dict[str, str]:
    """The endpoint tags of experiment `name` under `home`; none when there is no such
    experiment (its run fails as it starts, saying so). A path for a name, or a folder
    holding another experiment, is refused by `stored_config` (`InvalidName`)."""
    try:
        config = stored_config(home, name)
    except (OSError, ValueError) as exc:
        logger.warning("run of %r: no endpoint tags (%s)", name, exc)
        return {}
    return endpoint_tags(config, home)
