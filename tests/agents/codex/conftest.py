"""The Codex core against the real offline simulator (Responses API), one home per call."""

from __future__ import annotations

import hashlib
import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from flashrsi_dagster.agents.codex.adapter import HARNESS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, RequestRecord, ServerConfig

CORE = HARNESS / "python_core"


@pytest.fixture(scope="module")
def server() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


@pytest.fixture(scope="session")
def core() -> Iterator[SimpleNamespace]:
    """The core's modules, imported the way its entry does: its folder on sys.path."""
    sys.path.insert(0, str(CORE))
    try:
        yield SimpleNamespace(
            apply_patch=importlib.import_module("codex_core.apply_patch"),
            shell_snapshot=importlib.import_module("codex_core.shell_snapshot"),
            shell=importlib.import_module("codex_core.shell"),
        )
    finally:
        sys.path.remove(str(CORE))
        for name in [m for m in sys.modules if m.split(".")[0] == "codex_core"]:
            del sys.modules[name]


@pytest.fixture
def harness_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "harness"
    shutil.copytree(HARNESS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def role(server: OfflineModelServer, script: str, **fields) -> RoleConfig:
    llm = {
        "model": script if "/" in script else f"simulator/script:{script}",
        "base_url": server.url,
        "api": "responses",
        "max_retries": 0,
        **fields.pop("llm", {}),
    }
    return RoleConfig.model_validate({"type": "codex", "llm": llm, **fields})


def call(tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def shell(script: str) -> dict:
    return call("shell", command=["bash", "-lc", script])


def patch(*lines: str) -> dict:
    return call("apply_patch", input="\n".join(["*** Begin Patch", *lines, "*** End Patch"]))


def requests_for(server: OfflineModelServer, script: str) -> list[RequestRecord]:
    return [r for r in server.requests if r.model == f"simulator/script:{script}"]


def tool_names(request: RequestRecord) -> list[str]:
    return [tool["name"] for tool in (request.body or {}).get("tools") or []]


def outputs(trajectory) -> list[str]:
    """What each tool call returned, in order (the `tool` messages)."""
    return [m["content"] for m in trajectory.messages if m["role"] == "tool"]


def tree_digest(folder: Path) -> str:
    """Every path, mode and content under `folder`: equal digests, untouched folder."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(f"{path.relative_to(folder)} {path.stat().st_mode}".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()
