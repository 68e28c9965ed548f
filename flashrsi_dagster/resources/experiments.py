"""Experiments as a Dagster resource: opened by name from their `run_meta.json`, so a run,
a sensor or the UI needs only the home folder, never the original YAML file. It hands each
algorithm the parts it runs on from the other resources: the snapshot store, the target and
Worker agents, the Harbor environment and the offline model server."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg
from pydantic import Field

from flashrsi_dagster.agents import Agent
from flashrsi_dagster.algorithms.meta_harness import (
    Layout,
    MetaHarness,
    State,
    Step,
    next_step,
    read_state,
)
from flashrsi_dagster.algorithms.parts import AgentFactory, Parts
from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.experiment import Experiment, ExperimentPaths, open_experiment
from flashrsi_dagster.experiment.identity import RunMeta
from flashrsi_dagster.records import read_record
from flashrsi_dagster.resources.agents import TargetAgentResource, WorkerAgentResource
from flashrsi_dagster.resources.harbor import HarborEnvironmentResource
from flashrsi_dagster.resources.offline_model import OfflineModelResource
from flashrsi_dagster.resources.snapshots import SnapshotStoreResource


class ExperimentsResource(dg.ConfigurableResource):
    """The experiments under one home folder."""

    home: str = Field(".flashrsi", description="Folder holding the experiments.")
    snapshot_store: SnapshotStoreResource
    target_agent: TargetAgentResource
    worker_agent: WorkerAgentResource
    harbor: HarborEnvironmentResource
    offline_model: OfflineModelResource

    @classmethod
    def at(cls, home: str | Path) -> ExperimentsResource:
        """The resource with default parts: for code outside a Dagster run (CLI, sensors)."""
        return cls(**default_parts(), home=str(home))

    def names(self) -> list[str]:
        root = Path(self.home)
        return sorted(p.parent.name for p in root.glob("*/run_meta.json")) if root.is_dir() else []

    def config(self, name: str) -> ExperimentConfig:
        meta = read_record(ExperimentPaths(Path(self.home) / name).run_meta, RunMeta)
        config = ExperimentConfig.model_validate(meta.config)
        config.experiment.home = Path(self.home).resolve()
        return config

    def create(
        self, config_file: str | Path, *, name: str | None = None, overrides: Sequence[str] = ()
    ) -> Experiment:
        """A new experiment under this home from a YAML file (opening the same one again is
        fine; a changed config is refused as everywhere else)."""
        renamed = ["--experiment.name", name] if name else []
        config = load_config(
            Path(config_file), [*overrides, *renamed, "--experiment.home", self.home]
        )
        return self._open(config)

    def open(self, name: str) -> Experiment:
        return self._open(self.config(name))

    def _open(self, config: ExperimentConfig) -> Experiment:
        limits = self.snapshot_store
        return open_experiment(
            config, max_file_bytes=limits.max_file_bytes, max_total_bytes=limits.max_total_bytes
        )

    def state(self, name: str) -> State:
        """The experiment's records so far; nothing is started to read them."""
        return _state(self.open(name))

    def next_step(self, name: str) -> Step:
        """What the experiment does next: the CLI and the sensor both ask here."""
        experiment = self.open(name)
        return next_step(_state(experiment), experiment.config.algorithm.max_steps)

    def meta_harness(self, name: str, log=print) -> MetaHarness:
        experiment = self.open(name)

        def serving(build: AgentFactory) -> AgentFactory:
            # the model server is started only by a step that builds an agent
            def factory(
                role: RoleConfig, files_dir: Path | None, *, confinement: Confinement | None
            ) -> Agent:
                self.offline_model.serve(experiment.config)
                return build(role, files_dir, confinement=confinement)

            return factory

        parts = Parts(
            target=serving(self.target_agent.build),
            worker=serving(self.worker_agent.build),
            benchmark=self.harbor.benchmark,
        )
        return MetaHarness(experiment, parts=parts, log=log)


def _state(experiment: Experiment) -> State:
    layout = Layout.of(experiment.paths.records)
    return read_state(layout, experiment.config.algorithm.max_steps)


def default_parts() -> dict:
    """One default instance of every part resource, keyed as the Definitions bind them."""
    return {
        "snapshot_store": SnapshotStoreResource(),
        "target_agent": TargetAgentResource(),
        "worker_agent": WorkerAgentResource(),
        "harbor": HarborEnvironmentResource(),
        "offline_model": OfflineModelResource(),
    }
