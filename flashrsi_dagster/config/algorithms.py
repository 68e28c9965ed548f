"""The `algorithm` section: one config per algorithm, told apart by `name`. Each declares its
parameters and its own agent roles (the Worker, a reviewer, …) besides the target; each lives
in its algorithm's folder (`algorithms/<name>/config.py`) and is found through the registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Union

from pydantic import Field

from flashrsi_dagster.config.models import RoleConfig, Section


class AlgorithmSection(Section):
    """What every algorithm's config has: a name and its roles."""

    EDITING_ROLES: ClassVar[frozenset[str]] = frozenset({"worker"})
    """Roles that edit harness files: their adapter must have file tools."""
    REQUIRED_SPLITS: ClassVar[tuple[str, ...]] = ("dev", "test")
    """Splits that must not be empty: selection is on dev, the sealed test scores the
    promoted snapshot (an empty one has no score, found only at the very end)."""

    def roles(self) -> dict[str, RoleConfig]:
        """The algorithm's agent roles by name (the target is the experiment's `agent`); an
        optional role left out of the config is not one."""
        return {
            name: value
            for name in type(self).model_fields
            if isinstance(value := getattr(self, name), RoleConfig)
        }

    def adopted_improver(self) -> bool:
        """Whether the Worker runs the adopted harness (`worker.harness: adopted`) rather
        than its own (an algorithm without a Worker role never does)."""
        worker = getattr(self, "worker", None)
        return getattr(worker, "harness", "fixed") == "adopted"

    def split_problems(self, sizes: Mapping[str, int]) -> list[str]:
        """What the algorithm's settings ask of the drawn splits (`sizes`: tasks in train,
        dev and test) that they cannot give, one line each."""
        return []

    def seed_problems(self, harness: Path, declared: Callable[[str], bool]) -> list[str]:
        """What the algorithm's settings need of the seed harness (the target's folder;
        `declared(path)`: its components declare the file) that is not there, one line each."""
        return []

    def sibling_problems(self, home: Path) -> list[str]:
        """What the algorithm's settings need of the other experiments of the home (one
        they name, say) that is not there, one line each."""
        return []

    def parameters(self) -> dict[str, object]:
        """The algorithm's settings other than its name and roles, for one-line summaries."""
        roles = {
            name
            for name, field in type(self).model_fields.items()
            if any(
                isinstance(kind, type) and issubclass(kind, RoleConfig)
                for kind in (field.annotation, *getattr(field.annotation, "__args__", ()))
            )
        }
        return self.model_dump(exclude={"name", *roles})


def algorithm_config() -> Any:
    """The section's type: every registered algorithm's config, told apart by `name`. Built
    at import time, so an algorithm the environment names that does not load is left out
    here (a config naming it is refused) and reported by `registry.check()`."""
    from flashrsi_dagster.algorithms import registry

    models = tuple(entry.load("config") for entry in registry.loadable().values())
    if len(models) == 1:
        return models[0]
    return Annotated[Union[models], Field(discriminator="name")]  # noqa: UP007
