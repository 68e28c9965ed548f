"""`evolve()`: Meta-Harness from Python, in a temporary experiment folder (in the process's
scratch folder) that is removed afterwards, also when it fails; a killed process leaves it
for the next start to sweep. The runner (`flashrsi run`) keeps its records instead."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Log
from flashrsi_dagster.algorithms.meta_harness.plan import State
from flashrsi_dagster.algorithms.meta_harness.run import MetaHarness
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.experiment import open_experiment
from flashrsi_dagster.scratch import scratch_dir


def evolve(config: ExperimentConfig, *, log: Log = print) -> State:
    with scratch_dir("evolve-") as home:
        harness = None
        try:
            scoped = config.model_copy(deep=True)
            scoped.experiment.home = home
            harness = MetaHarness(open_experiment(scoped), log=log)
            return harness.run()
        finally:
            if harness is not None:
                harness.discard_history()
