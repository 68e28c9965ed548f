"""Driving an experiment's rounds through Dagster: the same "what next" function serves the
CLI (in-process, here) and the sensor (in the daemon), so both take identical steps."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.algorithms.meta_harness import Step
from flashrsi_dagster.assets.meta_harness import DRIVER_TAG, FINAL_ASSETS, ROUND_ASSETS
from flashrsi_dagster.assets.partitions import partition
from flashrsi_dagster.records import IntegrityError
from flashrsi_dagster.resources import ExperimentIOManager, ExperimentsResource, default_parts


def resources(home: str, **parts: dg.ConfigurableResource) -> dict:
    """Every resource a run needs (`parts` replace default ones by key); the part resources
    are bound at the top level too, so each is one instance (the UI lists them and shows
    what uses them)."""
    parts = {**default_parts(), **parts}
    return {
        "experiments_home": ExperimentsResource(home=home, **parts),
        "io_manager": ExperimentIOManager(home=home),
        **parts,
    }


def run_key(name: str, step: Step) -> str:
    return f"{name}:{step.action}:{step.round}"


QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
"""In-process runs log their events to the instance (the UI shows them); the terminal gets
only warnings, so the CLI's own progress lines stay readable."""


def execute(
    instance: dg.DagsterInstance,
    home: str,
    name: str,
    step: Step,
    parts: dict[str, dg.ConfigurableResource] | None = None,
) -> bool:
    """Run one step in-process; True when Dagster reports success. A step refused because
    the records fail their integrity check raises that `IntegrityError` here, so the caller
    can name the files instead of pointing at a failed run."""
    tags = {DRIVER_TAG: "1", "flashrsi/experiment": name, "dagster/run_key": run_key(name, step)}
    if step.action in ("evaluate_seed", "propose"):
        result = dg.materialize(
            ROUND_ASSETS,
            partition_key=partition(name, step.round or 0),
            instance=instance,
            resources=resources(home, **(parts or {})),
            tags=tags,
            raise_on_error=False,
            run_config=QUIET,
        )
    else:
        assets = FINAL_ASSETS if step.action == "promote" else FINAL_ASSETS[1:]
        result = dg.materialize(
            assets,
            partition_key=name,
            instance=instance,
            resources=resources(home, **(parts or {})),
            tags=tags,
            raise_on_error=False,
            run_config=QUIET,
        )
    _raise_integrity_failure(result)
    return result.success


def _raise_integrity_failure(result: dg.ExecuteInProcessResult) -> None:
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        while error is not None:
            if error.cls_name == IntegrityError.__name__:
                raise IntegrityError.from_message(error.message)
            error = error.cause
