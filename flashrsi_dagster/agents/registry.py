"""Adapter types: short names map lazily to classes; any `package.module:Class` works too."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flashrsi_dagster.agents.base import Agent

ADAPTERS: dict[str, str] = {
    "miniagent": "flashrsi_dagster.agents.miniagent.adapter:MiniAgent",
    "claude-code": "flashrsi_dagster.agents.claude_code.adapter:ClaudeCode",
    "codex": "flashrsi_dagster.agents.codex.adapter:Codex",
    "codex-cli": "flashrsi_dagster.agents.codex_cli.adapter:CodexCLI",
    "llm": "flashrsi_dagster.agents.plain_llm.adapter:PlainLLM",
    "harbor-oracle": "flashrsi_dagster.benchmarks.harbor.targets:HarborOracle",
    "harbor-nop": "flashrsi_dagster.benchmarks.harbor.targets:HarborNop",
}


class UnknownAdapterError(LookupError):
    pass


def adapter_class(adapter_type: str) -> type[Agent]:
    from flashrsi_dagster.agents.base import Agent

    target = ADAPTERS.get(adapter_type, adapter_type)
    module_name, _, class_name = target.partition(":")
    if not class_name:
        raise UnknownAdapterError(
            f"unknown agent type {adapter_type!r}; built-in: {', '.join(sorted(ADAPTERS))}, "
            "or name a class as `package.module:Class`"
        )
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise UnknownAdapterError(f"cannot import agent type {adapter_type!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise UnknownAdapterError(f"agent type {adapter_type!r} is not an Agent subclass")
    return cls
