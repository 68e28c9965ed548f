"""Algorithms by name, as agents have their registry: the config's `algorithm.name` picks
the class, and experiments are opened through here."""

from __future__ import annotations

from flashrsi_dagster.algorithms.base import Algorithm, Log
from flashrsi_dagster.algorithms.builders import DEFAULT_BUILDERS, Builders
from flashrsi_dagster.algorithms.evolver.run import Evolver
from flashrsi_dagster.algorithms.meta_harness import MetaHarness
from flashrsi_dagster.algorithms.modular_rsi.run import ModularRSI
from flashrsi_dagster.experiment import Experiment

ALGORITHMS: dict[str, type[Algorithm]] = {
    MetaHarness.name: MetaHarness,
    ModularRSI.name: ModularRSI,
    Evolver.name: Evolver,
}


def algorithm_class(name: str) -> type[Algorithm]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        known = ", ".join(sorted(ALGORITHMS))
        raise ValueError(f"algorithm.name: unknown algorithm {name!r} (known: {known})") from None


def open_algorithm(
    experiment: Experiment, *, builders: Builders = DEFAULT_BUILDERS, log: Log = print
) -> Algorithm:
    """The experiment's algorithm, ready to read its state and take steps."""
    cls = algorithm_class(experiment.config.algorithm.name)
    return cls(experiment, builders=builders, log=log)  # type: ignore[call-arg]
