"""Inside a task environment: the confinement of an agent whose gateway token was granted on
the host. The environment itself is the run's confinement (its own namespaces and root); the
agent talks to its model only through the gateway socket the host opened there."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from flashrsi_dagster.config.models import LLMConfig, WebConfig
from flashrsi_dagster.environments.confinement import BASE_ENV, AgentRun, Confinement
from flashrsi_dagster.environments.jail import JailSpec, Mount
from flashrsi_dagster.gateway import Upstream


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
    def run(
        self,
        role: str,
        llm: LLMConfig,
        *,
        writable: Sequence[Path],
        read_only: Sequence[Mount] = (),
        runtime: JailSpec | None = None,
        bridge: Sequence[str] | None = None,
        upstream: Upstream | None = None,
        max_model_calls: int | None = None,
        web: WebConfig | None = None,
        deny_tools: Sequence[str] = (),
        shell_timeout: float | None = None,
        output_limit: int | None = None,
    ) -> Iterator[AgentRun]:
        # The budgets, web, denied tools and output limit were granted with the token on the
        # host (`inside._gateway`), from the same role config and snapshot: nothing here can
        # loosen them. The shell timeout is the harness's own here (no jail to watch).
        if bridge:
            raise RuntimeError("an agent inside a task environment runs its commands there")
        if upstream is not None:
            raise RuntimeError("the run's upstream was fixed when the host granted its token")
        yield AgentRun(self.token, self.base_url, None, dict(BASE_ENV, HOME="/tmp"))
