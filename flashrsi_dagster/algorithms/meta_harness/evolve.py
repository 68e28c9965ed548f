"""`evolve()`: Meta-Harness from Python, in a temporary experiment folder that is removed
afterwards (also when it fails). The runner (`flashrsi run`) keeps its records instead."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from flashrsi_dagster.algorithms.meta_harness.plan import State
from flashrsi_dagster.algorithms.meta_harness.run import Log, MetaHarness
from flashrsi_dagster.config.models import ExperimentConfig
from flashrsi_dagster.experiment import open_experiment


def evolve(config: ExperimentConfig, *, log: Log = print) -> State:
    home = Path(tempfile.mkdtemp(prefix="flashrsi-evolve-"))
    harness = None
    try:
        scoped = config.model_copy(deep=True)
        scoped.experiment.home = home
        harness = MetaHarness(open_experiment(scoped), log=log)
        return harness.run()
    finally:
        if harness is not None:
            harness.history.discard()
        shutil.rmtree(home, ignore_errors=True)
