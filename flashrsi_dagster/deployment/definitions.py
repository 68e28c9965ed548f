"""Every registered algorithm's Dagster layer (`AlgorithmDefs`), merged with the pieces every
algorithm shares — starting an experiment, the round driver, the nightly schedule, the
resources — into one `Definitions` for a home folder."""

from __future__ import annotations

import dagster as dg

from flashrsi_dagster.deployment.sensors import NightlyConfig, nightly_evolution, round_driver
from flashrsi_dagster.deployment.start import start_experiment
from flashrsi_dagster.orchestration.algorithm_defs import all_defs
from flashrsi_dagster.orchestration.resources import resources


def build_definitions(home: str, **parts: dg.ConfigurableResource) -> dg.Definitions:
    """Everything, with resources bound to `home` (`parts` replace default ones by key)."""
    algorithms = all_defs().values()
    return dg.Definitions(
        assets=[a for d in algorithms for a in d.assets],
        jobs=[*(j for d in algorithms for j in d.jobs), start_experiment],
        sensors=[round_driver],
        schedules=[nightly_evolution],
        resources={**resources(home, **parts), "nightly": NightlyConfig()},
    )
