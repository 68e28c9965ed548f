"""Which policy answers a request: chosen by the request's `model` id. The policies that play
an algorithm's roles are named in its registry entry (`algorithms/<name>/__init__.py`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from flashrsi_dagster.algorithms import registry
from flashrsi_dagster.offline_model.conversation import Conversation, Reply
from flashrsi_dagster.offline_model.errors import SimulatorError
from flashrsi_dagster.offline_model.policies.classify import classify
from flashrsi_dagster.offline_model.policies.echo import echo
from flashrsi_dagster.offline_model.policies.editing_check import answering
from flashrsi_dagster.offline_model.policies.script import Script, load_script

Policy = Callable[[Conversation], Reply]

SCRIPT_PREFIX = "simulator/script:"
BUILTIN: dict[str, Policy] = {
    "simulator/echo": echo,
    "simulator/target": classify,
}
"""Policies of no one algorithm: the echo and the text classification target."""


@cache
def _algorithm_policies() -> dict[str, str]:
    """Model id -> the algorithm that names its policy, for every registered algorithm (read
    once: the registry is fixed for the process, and this is on every request's path)."""
    return {model: name for name in registry.names() for model in registry.entry(name).policies}


class PolicyRegistry:
    """The built-in policies plus the scripts registered on one server."""

    def __init__(self) -> None:
        self._scripts: dict[str, Script] = {}
        self._lock = threading.Lock()

    def add_script(self, name: str, source: Path | str | Sequence[Any]) -> str:
        """Register (or replace) a script; returns its model id. Raises `ScriptError`."""
        name = name.removeprefix(SCRIPT_PREFIX)
        if not name:
            raise ValueError("a script needs a non-empty name")
        replies, origin = load_script(source)
        with self._lock:
            self._scripts[name] = Script(name, replies, origin)
        return SCRIPT_PREFIX + name

    def model_ids(self) -> list[str]:
        with self._lock:
            scripts = [SCRIPT_PREFIX + name for name in sorted(self._scripts)]
        return [*BUILTIN, *_algorithm_policies(), *scripts]

    def resolve(self, model: str) -> Policy:
        if model in BUILTIN:
            return BUILTIN[model]
        if (algorithm := _algorithm_policies().get(model)) is not None:
            # An algorithm's model may run as an improver, whose editing ability a host
            # checks (`algorithms/editing_check`): every such policy answers the check.
            return answering(registry.entry(algorithm).policy(model))
        with self._lock:
            script = self._scripts.get(model.removeprefix(SCRIPT_PREFIX))
        if model.startswith(SCRIPT_PREFIX) and script is not None:
            return answering(script)  # a scripted Worker is also checked as an improver
        raise SimulatorError(
            404,
            f"the offline model simulator has no model {model!r}; "
            f"available: {', '.join(self.model_ids())}",
        )
