"""Inside a task environment: the confinement of an agent whose gateway token was granted on
the host. The environment itself is the run's confinement (its own namespaces and root); the
agent talks to its model only through the gateway socket the host opened there."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from flashrsi_dagster.environments.confinement import BASE_ENV, AgentRun, Confinement, RunSpec


@dataclass
class HandedConfinement(Confinement):
    """Every run gets the host's per-run `token` and the gateway at `base_url`; no jail, no
    gateway of its own (the host meters the run and applies the verdict)."""

    token: str = ""
    base_url: str = ""

    def __post_init__(self) -> None:
        self.jailed = False

    def unjailed(self) -> HandedConfinement:
        return self

    @contextlib.contextmanager
    def confine(self, spec: RunSpec) -> Iterator[AgentRun]:
        # The budgets, web, denied tools and output limit were granted with the token on the
        # host (`inside._gateway`), from the same role config and snapshot: nothing here can
        # loosen them. The shell timeout is the harness's own here (no jail to watch).
        if spec.bridge:
            raise RuntimeError("an agent inside a task environment runs its commands there")
        if spec.upstream is not None:
            raise RuntimeError("the run's upstream was fixed when the host granted its token")
        yield AgentRun(self.token, self.base_url, None, dict(BASE_ENV, HOME="/tmp"))
