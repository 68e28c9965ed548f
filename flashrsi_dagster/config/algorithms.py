"""The `algorithm` section: one config per algorithm, told apart by `name`. Each declares its
parameters and its own agent roles (the Worker, a reviewer, …) besides the target."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from flashrsi_dagster.config.models import MAX_STEPS, Count, RoleConfig, Section


class AlgorithmSection(Section):
    """What every algorithm's config has: a name and its roles."""

    EDITING_ROLES: ClassVar[frozenset[str]] = frozenset({"worker"})
    """Roles that edit harness files: their adapter must have file tools."""
    REQUIRED_SPLITS: ClassVar[tuple[str, ...]] = ("dev", "test")
    """Splits that must not be empty: selection is on dev, the sealed test scores the
    promoted snapshot (an empty one has no score, found only at the very end)."""

    def roles(self) -> dict[str, RoleConfig]:
        """The algorithm's agent roles by name (the target is the experiment's `agent`)."""
        return {
            name: value
            for name in type(self).model_fields
            if isinstance(value := getattr(self, name), RoleConfig)
        }


class MetaHarnessConfig(AlgorithmSection):
    name: Literal["meta_harness"]
    max_steps: Count = Field(
        20, ge=1, le=MAX_STEPS, description="Worker edit attempts after the seed round."
    )
    worker: RoleConfig = Field(description="The Worker agent; it must have file tools.")


class ModularRSIConfig(AlgorithmSection):
    """Provisional: the config engineer's version replaces it."""

    REQUIRED_SPLITS: ClassVar[tuple[str, ...]] = ("train", "test")
    name: Literal["modular_rsi"]
    modules: dict[str, list[str]]
    epochs: Count = 1
    batch_size: Count = 4
    num_rollouts: Count = 2
    edit_budget: Count = 3
    prompt_budget: Count = 60000
    integration_rounds: Count = 2
    worker: RoleConfig
    reviewer: RoleConfig | None = None
    review_by: Literal["worker", "reviewer"] = "worker"


AlgorithmConfig = Annotated[MetaHarnessConfig | ModularRSIConfig, Field(discriminator="name")]
