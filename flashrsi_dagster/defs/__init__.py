"""The Dagster layer per algorithm (`AlgorithmDefs`), merged with the pieces every algorithm
shares — starting an experiment, the round driver, the nightly schedule, the resources — into
one `Definitions` for a home folder."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.defs.base import AlgorithmDefs
from flashrsi_dagster.defs.evolver import DEFS as EVOLVER
from flashrsi_dagster.defs.meta_harness import DEFS as META_HARNESS
from flashrsi_dagster.defs.modular_rsi import DEFS as MODULAR_RSI

ALGORITHM_DEFS: dict[str, AlgorithmDefs] = {d.name: d for d in (META_HARNESS, MODULAR_RSI, EVOLVER)}


def defs_for(algorithm: str) -> AlgorithmDefs:
    return ALGORITHM_DEFS[algorithm]


def build_definitions(home: str, **parts: dg.ConfigurableResource) -> dg.Definitions:
    """Everything, with resources bound to `home` (`parts` replace default ones by key)."""
    from flashrsi_dagster.jobs.start import start_experiment
    from flashrsi_dagster.resources import resources
    from flashrsi_dagster.sensors import NightlyConfig, nightly_evolution, round_driver

    return dg.Definitions(
        assets=[a for d in ALGORITHM_DEFS.values() for a in d.assets],
        jobs=[*(j for d in ALGORITHM_DEFS.values() for j in d.jobs), start_experiment],
        sensors=[round_driver],
        schedules=[nightly_evolution],
        resources={**resources(home, **parts), "nightly": NightlyConfig()},
    )


__all__ = ["ALGORITHM_DEFS", "AlgorithmDefs", "build_definitions", "defs_for"]
