"""Experiment configuration: pydantic models, YAML loading, dotted overrides, secret references.

The names below load on first use: the `algorithm` section's type gathers every registered
algorithm's config (`algorithms/<name>/config.py`), and those build on `config.models`, so
importing one of them must not first require the whole experiment config."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flashrsi_dagster.config.errors import ConfigError, Problem
    from flashrsi_dagster.config.experiment import AlgorithmConfig, ExperimentConfig
    from flashrsi_dagster.config.loading import config_from_dict, load_config
    from flashrsi_dagster.config.models import (
        BenchmarkConfig,
        ExperimentSection,
        LLMConfig,
        RoleConfig,
        SplitCounts,
    )
    from flashrsi_dagster.config.secrets import MissingSecretError, SecretRef

_EXPORTS = {
    "AlgorithmConfig": "experiment",
    "BenchmarkConfig": "models",
    "ConfigError": "errors",
    "ExperimentConfig": "experiment",
    "ExperimentSection": "models",
    "LLMConfig": "models",
    "MissingSecretError": "secrets",
    "Problem": "errors",
    "RoleConfig": "models",
    "SecretRef": "secrets",
    "SplitCounts": "models",
    "config_from_dict": "loading",
    "load_config": "loading",
}
__all__ = [
    "AlgorithmConfig",
    "BenchmarkConfig",
    "ConfigError",
    "ExperimentConfig",
    "ExperimentSection",
    "LLMConfig",
    "MissingSecretError",
    "Problem",
    "RoleConfig",
    "SecretRef",
    "SplitCounts",
    "config_from_dict",
    "load_config",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
