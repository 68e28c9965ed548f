"""The container contract an adapter declares: `_container_dependencies` (None: cannot run
inside a task environment) and `_check_container()`, whose overrides call the base first."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.agents.base import AgentConfigError, ContainerUnsupported
from flashrsi_dagster.agents.plain_llm.adapter import PlainLLM
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.integrations.staging import FRAMEWORK_DISTRIBUTIONS, distributions_for

ROLE = RoleConfig.model_validate({"type": "llm", "llm": {"model": "simulator/echo"}})


class Declared(PlainLLM):
    """An external adapter that runs inside: its distribution is named, nothing more."""

    name = "declared"
    _container_dependencies = ("openai",)


class Picky(Declared):
    name = "picky"

    def _check_container(self) -> None:
        super()._check_container()
        raise ContainerUnsupported("picky needs a GPU inside")


class Undeclared(Picky):
    """Overrides the check but declares nothing: the base refuses first."""

    name = "undeclared"
    _container_dependencies = None


def _agent(cls, tmp_path: Path):
    return cls(ROLE, tmp_path, confinement=None)


def test_by_default_an_adapter_cannot_run_inside_and_says_so(tmp_path):
    with pytest.raises(ContainerUnsupported) as refused:
        _agent(PlainLLM, tmp_path)._check_container()
    assert str(refused.value).startswith("agent type 'llm' cannot run inside a task environment")
    assert isinstance(refused.value, AgentConfigError)


def test_a_declared_adapter_passes_and_an_override_runs_after_the_base_check(tmp_path):
    _agent(Declared, tmp_path)._check_container()
    with pytest.raises(ContainerUnsupported, match="needs a GPU"):
        _agent(Picky, tmp_path)._check_container()
    with pytest.raises(ContainerUnsupported, match="agent type 'undeclared' cannot run"):
        _agent(Undeclared, tmp_path)._check_container()


def test_what_goes_in_is_the_framework_s_distributions_and_the_declared_ones():
    assert distributions_for(Declared) == tuple(sorted({*FRAMEWORK_DISTRIBUTIONS, "openai"}))
