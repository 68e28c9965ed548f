"""Experiments as a Dagster resource: opened by name from their `run_meta.json`, so a run,
a sensor or the UI needs only the home folder, never the original YAML file."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from flashrsi_dagster.algorithms.meta_harness import MetaHarness
from flashrsi_dagster.config.models import ExperimentConfig
from flashrsi_dagster.experiment import Experiment, ExperimentPaths, open_experiment
from flashrsi_dagster.experiment.identity import RunMeta
from flashrsi_dagster.records import read_record


class ExperimentsResource(dg.ConfigurableResource):
    """The experiments under one home folder."""

    home: str = Field(".flashrsi", description="Folder holding the experiments.")

    def names(self) -> list[str]:
        root = Path(self.home)
        return sorted(p.parent.name for p in root.glob("*/run_meta.json")) if root.is_dir() else []

    def config(self, name: str) -> ExperimentConfig:
        meta = read_record(ExperimentPaths(Path(self.home) / name).run_meta, RunMeta)
        config = ExperimentConfig.model_validate(meta.config)
        config.experiment.home = Path(self.home).resolve()
        return config

    def open(self, name: str) -> Experiment:
        return open_experiment(self.config(name))

    def meta_harness(self, name: str, log=print) -> MetaHarness:
        return MetaHarness(self.open(name), log=log)
