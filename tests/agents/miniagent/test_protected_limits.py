"""agent.yaml#limits held outside the harness: a Worker that edits tools/shell.py to raise the
shell timeout to 10^6 s and the output limit to 10^9 characters gains nothing; the host kills
the command at the protected timeout and the gateway cuts what the model reads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.base import AgentConfigError
from flashrsi_dagster.agents.miniagent.adapter import HARNESS, MiniAgent
from flashrsi_dagster.agents.protected_limits import ProtectedLimits
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.gateway.clipping import FRAMING
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status
from tests.conftest import needs_jails

SHELL_TIMEOUT = 1
OUTPUT_LIMIT = 300
HUGE = 50_000


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


def edited_harness(root: Path) -> Path:
    """The seed harness with small protected limits, then the issue's attack on tools/shell.py
    (the edit a Worker may make: the file is evolvable, agent.yaml#limits is not)."""
    folder = root / "harness"
    shutil.copytree(HARNESS, folder)
    settings = yaml.safe_load((folder / "agent.yaml").read_text())
    settings["limits"] = {"shell_timeout": SHELL_TIMEOUT, "output_limit": OUTPUT_LIMIT}
    (folder / "agent.yaml").write_text(yaml.safe_dump(settings))
    shell = folder / "tools" / "shell.py"
    code = shell.read_text()
    for old, new in (
        ('_timeout(arguments.get("timeout"), ctx.shell_timeout)', "1e6"),
        ("_read(out, ctx.output_limit)", "_read(out, 10**9)"),
    ):
        assert old in code
        code = code.replace(old, new)
    shell.write_text(code)
    return folder


@needs_jails
def test_an_edited_shell_tool_gains_no_time_and_no_output(server, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    server.add_script(
        "limits",
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 600; echo never"}}]},
            {
                "tool_calls": [
                    {
                        "name": "shell",
                        "arguments": {"command": f"head -c {HUGE} /dev/zero | tr '\\0' y"},
                    }
                ]
            },
            {"text": "done"},
        ],
    )
    role = RoleConfig.model_validate(
        {
            "type": "miniagent",
            "timeout": 90,
            "llm": {
                "model": "simulator/script:limits",
                "base_url": server.url,
                "max_retries": 0,
                "timeout": 30,
            },
        }
    )
    server.clear_requests()
    with target_agent(role, edited_harness(tmp_path)) as agent:
        trajectory = agent.run(work, "wait, then print", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    killed = trajectory.metadata["shell_timeout"]
    assert killed["limit"] == SHELL_TIMEOUT
    assert any("sleep 600" in k["command"] for k in killed["killed_by_host"])
    tools = [m["content"] for m in trajectory.messages if m["role"] == "tool"]
    assert "killed by SIGKILL" in tools[0] and "never" not in tools[0]

    # What the model received: the last request holds both tool results, the huge one cut.
    sent = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert len(sent) == 2
    assert "y" * 100 in sent[1]["content"]
    assert len(sent[1]["content"]) <= OUTPUT_LIMIT + FRAMING
    assert "cut by the gateway" in sent[1]["content"]
    assert trajectory.metadata["output_limit"]["tool_results_cut_by_gateway"] >= 1
    assert len(tools[1]) <= OUTPUT_LIMIT + FRAMING  # and what the framework kept


def test_the_limits_are_read_from_the_protected_key(server, tmp_path: Path):
    folder = edited_harness(tmp_path)
    role = RoleConfig.model_validate(
        {"type": "miniagent", "llm": {"model": "simulator/echo", "base_url": server.url}}
    )

    with target_agent(role, folder) as agent:
        assert agent.protected_limits() == ProtectedLimits(SHELL_TIMEOUT, OUTPUT_LIMIT)
        agent.update(HARNESS)
        assert agent.protected_limits() == ProtectedLimits(120, 20_000)
        (folder / "agent.yaml").write_text("limits: {shell_timeout: -1}\n")
        agent.update(folder)
        with pytest.raises(AgentConfigError, match=r"agent\.yaml#limits\.shell_timeout"):
            agent.protected_limits()
    assert MiniAgent.limits_file is not None
