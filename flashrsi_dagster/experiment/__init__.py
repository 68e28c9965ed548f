"""An experiment: its folder, its identity, and the parts opened on it."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.environments.confinement import Confinement, confinement_for
from flashrsi_dagster.experiment.identity import ConfigChangedError, RunMeta, open_identity
from flashrsi_dagster.experiment.lock import LOCKS, StepLock
from flashrsi_dagster.experiment.paths import ALL_TASKS_RECORDS, ExperimentPaths
from flashrsi_dagster.records import RecordStore, RedactingFilter, Redactor, read_record
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.snapshots.guard import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES


@dataclass
class Experiment:
    config: ExperimentConfig
    paths: ExperimentPaths
    meta: RunMeta
    redactor: Redactor
    snapshots: SnapshotStore
    records: RecordStore
    """The one writer of the folder's records (redacted, atomic, in the integrity chain)."""
    _confinement: Confinement | None = field(default=None, repr=False)
    step_lock: StepLock = field(init=False, repr=False)
    """Held by every step that writes records: one step of the experiment at a time."""
    _locks: dict[str, StepLock] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.step_lock = StepLock.of(self.paths.root)

    def lock(self, name: str) -> StepLock:
        """A finer lock of the experiment, by name (`r003.c1`: a candidate's; `ledger`)."""
        if name not in self._locks:
            self._locks[name] = StepLock(self.paths.root / LOCKS / f"{name}.lock")
        return self._locks[name]

    def config_replaced(self) -> str | None:
        """Why a step of this object must not run: the experiment's config was replaced (a
        start or run under its name, before any rollout) since it was opened. Ask holding the
        step lock, under which a config is replaced."""
        now = read_record(self.paths.run_meta, RunMeta).fingerprint
        if now == self.meta.fingerprint:
            return None
        return (
            f"experiment {self.config.experiment.name!r}: its config was replaced since this "
            "run opened it; nothing was done (launch the step again to run it under the new one)"
        )

    @property
    def confinement(self) -> Confinement:
        """How this experiment's agents run (built on first use: planning needs none)."""
        if self._confinement is None:
            self._confinement = confinement_for(self.config, self.paths.gateway_log, self.redactor)
        return self._confinement

    def log_handler(self, name: str = "flashrsi.log") -> logging.Handler:
        """A file handler under `logs/` whose every line passes through redaction."""
        self.paths.logs.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.paths.logs / name, encoding="utf-8")
        handler.addFilter(RedactingFilter(self.redactor))
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        return handler


class NoExperiment(LookupError):
    """Opening, without creating, an experiment that was never started."""


def redactor_for(config: ExperimentConfig) -> Redactor:
    """A redactor knowing the value of every secret the config references (where set)."""
    return Redactor(ref.resolve() for ref in config.secret_refs() if ref.env_var in os.environ)


def open_experiment(
    config: ExperimentConfig,
    *,
    force: bool = False,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    create: bool = True,
) -> Experiment:
    """Open (or, if `create`, create) the experiment folder; refuses a changed config unless
    `force`. Without `create` a missing experiment is `NoExperiment`, and nothing is written."""
    paths = ExperimentPaths(config.experiment.dir)
    if not create and not paths.run_meta.is_file():
        raise NoExperiment(
            f"no experiment {config.experiment.name!r} under {config.experiment.home} "
            f"({paths.run_meta} is missing); nothing was created"
        )
    if not paths.run_meta.is_file() and (checked := sorted(paths.root.glob(ALL_TASKS_RECORDS))):
        raise NoExperiment(
            f"{paths.root} cannot become experiment {config.experiment.name!r}: "
            f"`flashrsi eval --split all` ran every task there, its test split's too "
            f"({checked[0].relative_to(paths.root)}), so nothing would be sealed; use "
            "another experiment name"
        )
    redactor = redactor_for(config)
    records = RecordStore(paths.root, redactor)
    store = SnapshotStore(
        paths.snapshots,
        max_file_bytes=max_file_bytes,
        max_total_bytes=max_total_bytes,
        secret_filter=redactor,
    )
    seeded = lambda: any(s.parent_id is None for s in store.history())  # noqa: E731
    lock = StepLock.of(paths.root)
    meta = open_identity(
        config, paths.run_meta, records, force=force, seeded=seeded, exclusive=lock.held
    )
    return Experiment(config, paths, meta, redactor, store, records)


__all__ = [
    "ConfigChangedError",
    "Experiment",
    "ExperimentPaths",
    "NoExperiment",
    "RunMeta",
    "open_experiment",
    "redactor_for",
]
