"""The run queue of a home's Dagster instance: Dagster's `QueuedRunCoordinator`, with tag
concurrency limits per experiment and per model endpoint (the tags of `defs/tags.py`).

Every run launched through the queue (by the UI, the round driver sensor, or `flashrsi run`
when a round has several candidates ready) waits there until the limits allow it; a run
counts against them from its launch to its end, however it was launched."""

from __future__ import annotations

import yaml
from pydantic import BaseModel, ConfigDict, Field

from flashrsi_dagster.assets.context import EXPERIMENT_TAG
from flashrsi_dagster.defs.tags import ENDPOINT_KEYS, endpoint_key

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
            "module": "dagster._core.run_coordinator",
            "class": "QueuedRunCoordinator",
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
