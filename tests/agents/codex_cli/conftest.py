"""The real Codex CLI (`make env` installs it) against the real offline simulator."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flashrsi_dagster.agents.codex_cli.install import CodexCLIMissing, find_install
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, RequestRecord, ServerConfig


def _missing() -> str | None:
    try:
        find_install()
    except CodexCLIMissing as exc:
        return str(exc)
    return None


_MISSING = _missing()
needs_codex = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
"""For tests that run the CLI: `make env` installs it where npm exists (CI has it)."""


@pytest.fixture(scope="module")
def server() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


def role(server: OfflineModelServer, script: str, **fields) -> RoleConfig:
    llm = {
        "model": f"simulator/script:{script}",
        "base_url": server.url,
        "api": "responses",
        "max_retries": 0,
        **fields.pop("llm", {}),
    }
    return RoleConfig.model_validate({"type": "codex-cli", "llm": llm, **fields})


def shell(cmd: str) -> dict:
    """A scripted reply: one call of the CLI's shell tool (`exec_command`)."""
    return {"tool_calls": [{"name": "exec_command", "arguments": {"cmd": cmd}}]}


def patch(text: str) -> dict:
    """A scripted reply: one call of the CLI's freeform `apply_patch` tool."""
    return {"tool_calls": [{"name": "apply_patch", "arguments": {"input": text}}]}


def requests_for(server: OfflineModelServer, script: str) -> list[RequestRecord]:
    return [r for r in server.requests if r.model == f"simulator/script:{script}"]
