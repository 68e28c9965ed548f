"""Experiment configuration: pydantic models, YAML loading, dotted overrides, secret references."""

from flashrsi_dagster.config.algorithms import (
    AlgorithmConfig,
    MetaHarnessConfig,
    ModularRSIConfig,
)
from flashrsi_dagster.config.errors import ConfigError, Problem
from flashrsi_dagster.config.experiment import ExperimentConfig
from flashrsi_dagster.config.loading import config_from_dict, load_config
from flashrsi_dagster.config.models import (
    BenchmarkConfig,
    ExperimentSection,
    LLMConfig,
    RoleConfig,
    SplitCounts,
)
from flashrsi_dagster.config.secrets import MissingSecretError, SecretRef

__all__ = [
    "AlgorithmConfig",
    "BenchmarkConfig",
    "ConfigError",
    "ExperimentConfig",
    "ExperimentSection",
    "LLMConfig",
    "MetaHarnessConfig",
    "MissingSecretError",
    "ModularRSIConfig",
    "Problem",
    "RoleConfig",
    "SecretRef",
    "SplitCounts",
    "config_from_dict",
    "load_config",
]
