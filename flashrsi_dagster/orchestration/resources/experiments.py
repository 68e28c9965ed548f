"""Experiments as a Dagster resource: opened by name from their `run_meta.json`, so a run,
a sensor or the UI needs only the home folder, never the original YAML file. It opens each
experiment's algorithm through the registry, with builders made from the other resources: the
snapshot store, the agents, the Harbor environment and the offline model server.

One resource instance serves one run (or one sensor tick): an experiment and its algorithm
are opened once and shared by every asset of the run, and closed when the run ends."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg
from pydantic import Field, PrivateAttr

from flashrsi_dagster.agents import Agent
from flashrsi_dagster.agents.roles import reviewer_agent
from flashrsi_dagster.algorithms.base import Algorithm, Log, Step
from flashrsi_dagster.algorithms.builders import AgentFactory, Builders
from flashrsi_dagster.algorithms.registry import open_algorithm
from flashrsi_dagster.config import load_config
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.models import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.experiment import Experiment, ExperimentPaths, open_experiment
from flashrsi_dagster.experiment.fork import ForkError, pinned
from flashrsi_dagster.experiment.identity import (
    RunMeta,
    config_changes,
    fingerprint,
    normalised,
    stored_config,
)
from flashrsi_dagster.experiment.keys import MAX_NAME
from flashrsi_dagster.orchestration.resources.agents import TargetAgentResource, WorkerAgentResource
from flashrsi_dagster.orchestration.resources.harbor import HarborEnvironmentResource
from flashrsi_dagster.orchestration.resources.offline_model import OfflineModelResource
from flashrsi_dagster.orchestration.resources.snapshots import SnapshotStoreResource
from flashrsi_dagster.records import read_record
from flashrsi_dagster.validation import dry_run


class InvalidExperiment(ValueError):
    """A config the dry run refuses: one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class ExperimentsResource(dg.ConfigurableResource):
    """The experiments under one home folder."""

    home: str = Field(".flashrsi", description="Folder holding the experiments.")
    dev_test_gap_warning: float = Field(
        0.10,
        ge=0,
        description="A dev-test gap (promoted dev score minus sealed test score) above this "
        "makes the sealed test's gap check warn.",
    )
    snapshot_store: SnapshotStoreResource
    target_agent: TargetAgentResource
    worker_agent: WorkerAgentResource
    harbor: HarborEnvironmentResource
    offline_model: OfflineModelResource
    _experiments: dict[str, Experiment] = PrivateAttr(default_factory=dict)
    _algorithms: dict[str, Algorithm] = PrivateAttr(default_factory=dict)

    @classmethod
    def at(cls, home: str | Path) -> ExperimentsResource:
        """The resource with default parts: for code outside a Dagster run (CLI, sensors)."""
        return cls(**default_parts(), home=str(home))

    def names(self, algorithm: str | None = None) -> list[str]:
        """The experiments under the home (of one algorithm, if given), by name."""
        root = Path(self.home)
        names = sorted(p.parent.name for p in root.glob("*/run_meta.json")) if root.is_dir() else []
        if algorithm is None:
            return names
        return [n for n in names if self._algorithm_name(n) == algorithm]

    def _algorithm_name(self, name: str) -> str | None:
        """The experiment's algorithm; None for one whose config cannot be read (it is not
        this one's to fail: a damaged or foreign folder beside it)."""
        try:
            return self.config(name).algorithm.name
        except ValueError:  # RecordError, ValidationError
            return None

    def exists(self, name: str) -> bool:
        return ExperimentPaths(Path(self.home) / name).run_meta.is_file()

    def config(self, name: str) -> ExperimentConfig:
        return stored_config(Path(self.home), name)

    def create(
        self, config_file: str | Path, *, name: str | None = None, overrides: Sequence[str] = ()
    ) -> Experiment:
        """A new experiment under this home from a YAML file, after the same dry run as
        `flashrsi run` (`InvalidExperiment` lists its problems; nothing is written). Opening
        the same one again is fine; a `name` that exists with another config is refused, even
        before any rollout ran: the round driver may already be running it. Without a `name`,
        the file's own, or where that is taken by another config (`make demo` ran the demo
        with other overrides), the first `<name>-<n>` that is free or holds this config: a
        default launch starts a fresh experiment or resumes the one it started before."""
        config = self.check(config_file, name=name, overrides=overrides)
        problems = dry_run(config)
        if problems:
            raise InvalidExperiment(problems)
        return self._open(config)

    def check(
        self, config_file: str | Path, *, name: str | None = None, overrides: Sequence[str] = ()
    ) -> ExperimentConfig:
        """`create`'s quick checks, writing nothing (the start job's launch runs them before
        a run is queued): the file loads with its overrides (`ConfigError`), and the name is
        not another config's (`InvalidExperiment`). The config `create` would start."""
        renamed = ["--experiment.name", name] if name else []
        config = load_config(
            Path(config_file), [*overrides, *renamed, "--experiment.home", self.home]
        )
        if not name:
            config = self._untaken(config)
        try:  # a fork's commit is pinned now: its identity holds what it starts from
            config = pinned(config)
        except ForkError as exc:
            raise InvalidExperiment([str(exc)]) from None
        problems = self._kept_config(config)
        if problems:
            raise InvalidExperiment(problems)
        return config

    def _untaken(self, config: ExperimentConfig) -> ExperimentConfig:
        base, n = config.experiment.name, 1
        while self._kept_config(config):
            n += 1
            name = f"{base[: MAX_NAME - len(str(n)) - 1]}-{n}"
            config = config.model_copy(
                update={"experiment": config.experiment.model_copy(update={"name": name})}
            )
        return config

    def _kept_config(self, config: ExperimentConfig) -> list[str]:
        """Why `config` cannot start an experiment of its name: it exists with another."""
        name = config.experiment.name
        if not self.exists(name):
            return []
        meta = read_record(ExperimentPaths(Path(self.home) / name).run_meta, RunMeta)
        current = normalised(config)
        if fingerprint(current) == meta.fingerprint:
            return []
        changes = "; ".join(config_changes(meta.config, current))
        return [
            f"experiment.name: {name!r} exists with another config, which it keeps (the round "
            f"driver may already be running it); start this one under a new name. Changed: "
            f"{changes}"
        ]

    def open(self, name: str) -> Experiment:
        if name not in self._experiments:
            self._experiments[name] = self._open(self.config(name))
        return self._experiments[name]

    def _open(self, config: ExperimentConfig) -> Experiment:
        limits = self.snapshot_store
        return open_experiment(
            config, max_file_bytes=limits.max_file_bytes, max_total_bytes=limits.max_total_bytes
        )

    def algorithm(self, name: str, log: Log = print) -> Algorithm:
        """The experiment's algorithm, opened once per run, built from this run's resources."""
        if name not in self._algorithms:
            self._algorithms[name] = open_algorithm(self.open(name), builders=self._builders(name))
        algorithm = self._algorithms[name]
        algorithm.log = log  # type: ignore[attr-defined]  # each asset logs to its own step
        return algorithm

    def next_step(self, name: str) -> Step:
        """What the experiment does next: the CLI, the sensor and the schedule ask here."""
        algorithm = self.algorithm(name)
        return algorithm.next_step(algorithm.read_state())

    def ready_steps(self, name: str) -> tuple[Step, ...]:
        """Every step of the experiment that may run now, side by side (the next first)."""
        algorithm = self.algorithm(name)
        return algorithm.ready_steps(algorithm.read_state())

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.close()

    def close(self) -> None:
        """Close every algorithm opened and forget the experiments: the next run (the same
        resource object serves every in-process run of `flashrsi run`) opens them afresh."""
        while self._algorithms:
            self._algorithms.popitem()[1].close()
        self._experiments.clear()

    def _builders(self, name: str) -> Builders:
        experiment = self.open(name)

        def serving(build: AgentFactory) -> AgentFactory:
            # the model server is started only by a step that builds an agent
            def factory(
                role: RoleConfig, files_dir: Path | None, *, confinement: Confinement | None
            ) -> Agent:
                self.offline_model.serve(experiment.config)
                return build(role, files_dir, confinement=confinement)

            return factory

        return Builders(
            target=serving(self.target_agent.build),
            worker=serving(self.worker_agent.build),
            reviewer=serving(reviewer_agent),
            benchmark=self.harbor.benchmark,
        )


def default_parts() -> dict:
    """One default instance of every part resource, keyed as the Definitions bind them."""
    return {
        "snapshot_store": SnapshotStoreResource(),
        "target_agent": TargetAgentResource(),
        "worker_agent": WorkerAgentResource(),
        "harbor": HarborEnvironmentResource(),
        "offline_model": OfflineModelResource(),
    }


def resources(home: str, **parts: dg.ConfigurableResource) -> dict:
    """Every resource a run needs (`parts` replace default ones by key); the part resources
    are bound at the top level too, so each is one instance (the UI lists them and shows
    what uses them)."""
    from flashrsi_dagster.orchestration.resources.io import ExperimentIOManager

    parts = {**default_parts(), **parts}
    return {
        "experiments_home": ExperimentsResource(home=home, **parts),
        "io_manager": ExperimentIOManager(home=home),
        **parts,
    }
