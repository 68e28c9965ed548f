"""Dagster resources: the experiments (with their agents, snapshot store and offline model,
opened from each experiment's config) and the IO manager writing under the experiment home."""

from flashrsi_dagster.resources.experiments import ExperimentsResource
from flashrsi_dagster.resources.io import ExperimentIOManager

__all__ = ["ExperimentIOManager", "ExperimentsResource"]
