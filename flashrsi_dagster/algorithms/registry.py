"""Algorithms by name, one line each, as agents have their registry: the config's
`algorithm.name` picks the package, whose `ALGORITHM` (an `AlgorithmEntry`) names the rest.

An algorithm that lives outside this package is added without editing it:
`FLASHRSI_ALGORITHMS="name=package.path,other=…"` in the environment of every process that
reads configs or loads the definitions (the CLI, the code location, the simulator)."""

from __future__ import annotations

import importlib
import os
from functools import cache
from typing import TYPE_CHECKING

from flashrsi_dagster.algorithms.entry import AlgorithmEntry

if TYPE_CHECKING:
    from flashrsi_dagster.algorithms.base import Algorithm, Log
    from flashrsi_dagster.algorithms.builders import Builders
    from flashrsi_dagster.experiment import Experiment

ALGORITHMS: dict[str, str] = {
    "meta_harness": "flashrsi_dagster.algorithms.meta_harness",
    "modular_rsi": "flashrsi_dagster.algorithms.modular_rsi",
    "evolver": "flashrsi_dagster.algorithms.evolver",
    "dgm": "flashrsi_dagster.algorithms.dgm",
    "stop": "flashrsi_dagster.algorithms.stop",
    "best_of_n": "flashrsi_dagster.algorithms.best_of_n",
}
PLUGINS_ENV = "FLASHRSI_ALGORITHMS"


class UnknownAlgorithmError(ValueError):
    pass


@cache
def registered() -> dict[str, str]:
    """Built-in algorithms, then those the environment adds (a name may not be replaced)."""
    names = dict(ALGORITHMS)
    for item in filter(None, (i.strip() for i in os.environ.get(PLUGINS_ENV, "").split(","))):
        name, sep, package = (part.strip() for part in item.partition("="))
        if not (sep and name.isidentifier() and package):
            raise UnknownAlgorithmError(f"{PLUGINS_ENV}: {item!r} is not `name=package.path`")
        if name in ALGORITHMS:
            raise UnknownAlgorithmError(f"{PLUGINS_ENV}: {name!r} is a built-in algorithm")
        names[name] = package
    return names


@cache
def entry(name: str) -> AlgorithmEntry:
    """The algorithm's declaration (importing only its package's light `__init__`)."""
    package = registered().get(name)
    if package is None:
        known = ", ".join(sorted(registered()))
        raise UnknownAlgorithmError(f"algorithm.name: unknown algorithm {name!r} (known: {known})")
    return _declared(name, package)


@cache
def _declared(name: str, package: str) -> AlgorithmEntry:
    try:
        module = importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if exc.name is None or not f"{package}.".startswith(f"{exc.name}."):
            raise  # the package exists; something it imports does not
        raise UnknownAlgorithmError(
            f"algorithm {name!r}: no package {package!r} to import (see {PLUGINS_ENV})"
        ) from None
    declared = getattr(module, "ALGORITHM", None)
    if not isinstance(declared, AlgorithmEntry):
        raise UnknownAlgorithmError(
            f"algorithm {name!r}: {package} declares no `ALGORITHM = AlgorithmEntry(...)`"
        )
    return declared


def names() -> list[str]:
    return list(registered())


def check() -> None:
    """Every registered algorithm's declaration, loaded; else `UnknownAlgorithmError` naming
    the first that is not (a malformed `FLASHRSI_ALGORITHMS`, a package that is not there or
    declares no `ALGORITHM`). Hosts call it first, to stop with that one line."""
    for name in registered():
        entry(name)


def loadable() -> dict[str, AlgorithmEntry]:
    """The registered algorithms whose declaration loads, by name: what a type built at
    import time (the config's `algorithm` section) may gather without failing the import,
    so that a host can still start and report `check()`'s one line."""
    try:
        listed = registered()
    except UnknownAlgorithmError:
        listed = ALGORITHMS
    found = {}
    for name, package in listed.items():
        try:
            found[name] = _declared(name, package)
        except UnknownAlgorithmError:
            continue
    return found


def algorithm_class(name: str) -> type[Algorithm]:
    return entry(name).load("engine")


def open_algorithm(
    experiment: Experiment, *, builders: Builders | None = None, log: Log = print
) -> Algorithm:
    """The experiment's algorithm, ready to read its state and take steps (built with its
    own default builders unless `builders` are given)."""
    cls = algorithm_class(experiment.config.algorithm.name)
    parts = {"builders": builders} if builders is not None else {}
    return cls(experiment, log=log, **parts)  # type: ignore[call-arg]
