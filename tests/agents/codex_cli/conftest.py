"""The real Codex CLI (`make env` installs it) against the real offline simulator."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flashrsi_dagster import scratch
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


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `tempfile` (and so the run folders) go during the test, to check they are removed."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setattr(scratch, "_mine", {})  # this process's scratch folder goes there too
    return folder


def left_in(temp_root: Path) -> list[Path]:
    """What runs left in the temp folder: all but the scratch folder this process keeps."""
    mine = scratch.process_dir()
    return [p for p in temp_root.rglob("*") if p not in (mine, mine.parent)]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


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
