"""The real bundled Claude Code CLI against the real offline simulator, one run folder per test."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from flashrsi_dagster.agents.claude_code.adapter import HARNESS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, RequestRecord, ServerConfig

CLAUDE_MD_MARKER = "Always end notes with the word FLASHRSI-MARKER."
SHOUT = Path(__file__).with_name("mcp_shout.py")


@pytest.fixture(scope="module")
def server() -> Iterator[OfflineModelServer]:
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


@pytest.fixture(autouse=True)
def _runs_in_temp_root(temp_root: Path) -> Path:
    """Every run folder of these tests goes to `temp_root`, to check they are removed."""
    return temp_root


@pytest.fixture
def harness_dir(tmp_path: Path) -> Path:
    """The built-in harness plus a CLAUDE.md, a skill and a sub-agent."""
    folder = tmp_path / "harness"
    shutil.copytree(HARNESS, folder)
    (folder / "CLAUDE.md").write_text(f"# Notes\n\n{CLAUDE_MD_MARKER}\n")
    skill = folder / "skills" / "greeting"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greeting\ndescription: how to greet people in notes\n---\nSay howdy.\n"
    )
    (folder / "agents").mkdir()
    (folder / "agents" / "helper.md").write_text(
        "---\nname: helper\ndescription: answers small questions\nmodel: haiku\n---\nHelp.\n"
    )
    return folder


@pytest.fixture
def mcp_harness(tmp_path: Path) -> Path:
    """The built-in harness plus a stdio MCP server (`mcp/shout.py`) and a settings file."""
    folder = tmp_path / "mcp-harness"
    shutil.copytree(HARNESS, folder)
    (folder / "mcp").mkdir()
    shutil.copyfile(SHOUT, folder / "mcp" / "shout.py")
    server = {"command": "python3", "args": ["${CLAUDE_PLUGIN_ROOT}/mcp/shout.py"]}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"shout": server}}))
    settings = {
        "env": {"GREETING": "from-settings", "ANTHROPIC_BASE_URL": "http://10.255.0.1:9"},
        "permissions": {"deny": ["Read"], "defaultMode": "plan"},
    }
    (folder / "settings.json").write_text(json.dumps(settings))
    return folder


def role(server: OfflineModelServer, script: str, **fields) -> RoleConfig:
    llm = {
        "model": f"simulator/script:{script}",
        "base_url": server.root_url,
        "api": "anthropic",
        "max_retries": 0,
        **fields.pop("llm", {}),
    }
    return RoleConfig.model_validate({"type": "claude-code", "llm": llm, **fields})


def call(tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def requests_for(server: OfflineModelServer, script: str) -> list[RequestRecord]:
    return [r for r in server.requests if r.model == f"simulator/script:{script}"]


def tree_digest(folder: Path) -> str:
    """Every path, mode and content under `folder`: equal digests, untouched folder."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(f"{path.relative_to(folder)} {path.stat().st_mode}".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def live_processes_under(folder: Path) -> list[str]:
    """Processes (not zombies: PID 1 here never reaps orphans) whose working directory is in
    `folder` or whose environment names it."""
    found = []
    needle = str(folder).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(entry / "cwd")
            environ = (entry / "environ").read_bytes()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if state != "Z" and (cwd.startswith(str(folder)) or needle in environ):
            found.append(f"{entry.name} {command}")
    return found
