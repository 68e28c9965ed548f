"""Claude Code inside a task environment: what it needs there, checked before the run.

Inside, the adapter runs as on the host with the environment as its confinement: the
bundled CLI (it ships in the `claude-agent-sdk` wheel, so the staged distributions carry it)
started by the SDK, talking to the gateway socket the host opened in the environment.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from flashrsi_dagster.agents.base import Agent, ContainerUnsupported
from flashrsi_dagster.config.experiment import role_key

if TYPE_CHECKING:
    from flashrsi_dagster.agents.claude_code.adapter import ClaudeCode

CONTAINER_DEPENDENCIES = ("claude-agent-sdk",)


def check_container(agent: ClaudeCode) -> None:
    """The base check, then the CLI (present, executable) and explicit credentials: the
    role's `llm.api_key` (the gateway injects it) or `llm.auth: login`."""
    Agent._check_container(agent)
    from flashrsi_dagster.agents.claude_code.options import bundled_cli

    where = role_key(agent.role)
    try:
        cli = bundled_cli()
    except ImportError:
        raise ContainerUnsupported(
            f"{where}.type: claude-code needs the claude-agent-sdk package to run inside a task "
            "environment: install the `claude` extra"
        ) from None
    if not os.access(cli, os.X_OK):
        raise ContainerUnsupported(
            f"{where}.type: claude-code: the bundled CLI {cli} is missing or not executable"
        )
    llm = agent.run_config.llm
    if llm.auth == "login":
        # A login is the gateway's upstream credential, fixed when the host grants the run's
        # token; the host's login must not be lent into a task's environment.
        raise ContainerUnsupported(
            f"{where}.llm.auth: claude-code inside a task environment needs an explicit "
            "api_key; a native login stays on the host"
        )
    if llm.api_key is None:
        raise ContainerUnsupported(
            f"{where}.llm.api_key: claude-code inside a task environment needs explicit "
            "credentials: set the role's api_key; nothing of the host's environment is passed in"
        )
