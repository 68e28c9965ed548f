"""Experiment configuration: pydantic models, YAML loading, dotted overrides, secret references."""

from flashrsi_dagster.config.errors import ConfigError, Problem
from flashrsi_dagster.config.loading import config_from_dict, load_config
from flashrsi_dagster.config.models import (
    BenchmarkConfig,
    ExperimentConfig,
    ExperimentSection,
    LLMConfig,
    MetaHarnessConfig,
    RoleConfig,
    SplitCounts,
)
from flashrsi_dagster.config.secrets import MissingSecretError, SecretRef

__all__ = [
    "BenchmarkConfig",
    "ConfigError",
    "ExperimentConfig",
    "ExperimentSection",
    "LLMConfig",
    "MetaHarnessConfig",
    "MissingSecretError",
    "Problem",
    "RoleConfig",
    "SecretRef",
    "SplitCounts",
    "config_from_dict",
    "load_config",
]
