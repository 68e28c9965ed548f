"""The whole experiment config: the sections of `models` and the algorithm's."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from flashrsi_dagster.config.algorithms import algorithm_config
from flashrsi_dagster.config.behaviour import BehaviourConfig
from flashrsi_dagster.config.comparison import ComparisonConfig
from flashrsi_dagster.config.models import BenchmarkConfig, ExperimentSection, RoleConfig, Section
from flashrsi_dagster.config.secrets import SecretRef

AlgorithmConfig = algorithm_config()
"""The `algorithm` section: the registered algorithm whose `name` the config gives."""


class ExperimentConfig(Section):
    experiment: ExperimentSection
    agent: RoleConfig = Field(description="The target role: runs benchmark tasks.")
    algorithm: AlgorithmConfig
    benchmark: BenchmarkConfig
    comparison: ComparisonConfig = Field(
        default_factory=ComparisonConfig,
        description="The trade-off rule every candidate-vs-baseline comparison of the decision "
        "ledger is judged by, declared before the run (`config/comparison.py`).",
    )
    behaviour: BehaviourConfig = Field(
        default_factory=BehaviourConfig,
        description="When a higher-scoring candidate's model calls or tokens are flagged as "
        "too few against its parent's (`config/behaviour.py`): a warning, not a rejection.",
    )

    def roles(self) -> dict[str, RoleConfig]:
        """Every agent role by name: the target, then the algorithm's (`worker`, …)."""
        return {"target": self.agent, **self.algorithm.roles()}

    def role_key(self, role: str) -> str:
        return role_key(role)

    def secret_refs(self) -> list[SecretRef]:
        """Every `${ENV_VAR}` the config references, in config order."""
        return list(_walk_secret_refs(self))


def role_key(role: str) -> str:
    """Where a role sits in the config, for messages: `agent`, `algorithm.worker`."""
    return "agent" if role == "target" else f"algorithm.{role}"


def _walk_secret_refs(value: Any):
    if isinstance(value, SecretRef):
        yield value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _walk_secret_refs(getattr(value, name))
