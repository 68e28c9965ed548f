"""What an algorithm's folder declares to the host, by dotted name only: its config model, its
engine, its Dagster definitions and the offline model's policies that play its roles. Nothing
is imported until asked for, so reading a config never imports an engine or Dagster."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AlgorithmEntry:
    """One algorithm. References are `module:attribute`; a module starting with `.` is
    relative to the algorithm's package (`.config:MetaHarnessConfig`)."""

    package: str
    config: str
    """The pydantic model of its `algorithm` section (an `AlgorithmSection` with a `name`)."""
    engine: str
    """Its `Algorithm` class."""
    definitions: str
    """Its `AlgorithmDefs` (the Dagster layer: assets, jobs, checks)."""
    policies: Mapping[str, str] = field(default_factory=dict)
    """Offline model ids (`simulator/worker`) -> the simulator policy that plays the role."""

    def load(self, part: str) -> Any:
        """The object one of the references above names."""
        return resolve(getattr(self, part), self.package)

    def policy(self, model: str) -> Any:
        return resolve(self.policies[model], self.package)


def resolve(reference: str, package: str) -> Any:
    module, _, attribute = reference.partition(":")
    if module.startswith("."):
        module = package + module if module != "." else package
    return getattr(importlib.import_module(module), attribute)
