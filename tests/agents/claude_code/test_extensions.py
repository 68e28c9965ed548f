"""The snapshot's MCP servers and settings load explicitly, inside the jail, under the
framework's own keys; a snapshot extension that cannot load is an error trajectory."""

from __future__ import annotations

import json

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.claude_code.adapter import ClaudeCode
from flashrsi_dagster.records import Status
from tests.agents.claude_code.conftest import call, requests_for, role


def _tool_results(trajectory) -> dict[str, object]:
    return {
        block["tool_use_id"]: block["content"]
        for message in trajectory.messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    }


def test_mcp_servers_and_settings_load_from_the_snapshot(server, mcp_harness, work):
    server.add_script(
        "mcp",
        [
            call("mcp__shout__shout", text="hello"),
            call("Bash", command="echo $GREETING > greeting.txt"),
            call("Read", file_path=str(work / "greeting.txt")),
            {"text": "done"},
        ],
    )
    with target_agent(role(server, "mcp"), mcp_harness) as agent:
        trajectory = agent.run(work, "Shout hello", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    results = _tool_results(trajectory)
    # The server ran inside the jail, as a child of the CLI, from the snapshot's mcp/ folder.
    assert results["call_1"] == [{"type": "text", "text": "SHOUTED: HELLO"}]
    # The snapshot's settings: its env reaches the tools, its deny rule holds ...
    assert (work / "greeting.txt").read_text() == "from-settings\n"
    assert "Read is disabled" in str(results["call_3"])
    # ... but the endpoint and the permission mode stay the framework's.
    assert len(requests_for(server, "mcp")) == 4
    init = next(m for m in trajectory.messages if m.get("subtype") == "init")
    assert init["data"]["permissionMode"] == "bypassPermissions"


def test_the_plugin_manifests_own_mcp_servers_load_with_the_plugin(server, mcp_harness, work):
    servers = json.loads((mcp_harness / ".mcp.json").read_text())["mcpServers"]
    (mcp_harness / ".mcp.json").unlink()
    manifest = {"name": "harness", "version": "1.0.0", "mcpServers": servers}
    (mcp_harness / ".claude-plugin").mkdir()
    (mcp_harness / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    server.add_script(
        "plugin-mcp", [call("mcp__plugin_harness_shout__shout", text="hi"), {"text": "done"}]
    )
    with target_agent(role(server, "plugin-mcp"), mcp_harness) as agent:
        trajectory = agent.run(work, "Shout hi", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert _tool_results(trajectory)["call_1"] == [{"type": "text", "text": "SHOUTED: HI"}]


@pytest.mark.parametrize(
    ("path", "text", "message"),
    [
        (".mcp.json", "{not json", "the snapshot's MCP config .mcp.json: not valid JSON"),
        (".mcp.json", '{"mcpServers": []}', "mcpServers must map names to server objects"),
        ("settings.json", "[]", "the snapshot's settings settings.json: expected a JSON object"),
        ("hooks/hooks.json", '{"hooks": ', "the snapshot's hook config hooks.json: not valid"),
    ],
)
def test_a_broken_extension_config_is_an_error_before_the_cli_starts(
    server, mcp_harness, work, path, text, message
):
    (mcp_harness / path).write_text(text)
    with target_agent(role(server, "unused"), mcp_harness) as agent:
        trajectory = agent.run(work, "anything", task_id="t")

    assert trajectory.status == Status.ERROR
    assert trajectory.error.type == "ExtensionLoadError"
    assert message in trajectory.error.message
    assert requests_for(server, "unused") == []


def test_an_mcp_server_that_fails_to_start_ends_the_run_as_an_error(server, mcp_harness, work):
    (mcp_harness / "mcp" / "shout.py").write_text("raise SystemExit(3)\n")
    server.add_script("broken-mcp", [{"text": "never needed"}])
    with target_agent(role(server, "broken-mcp"), mcp_harness) as agent:
        trajectory = agent.run(work, "Shout", task_id="t")

    assert trajectory.status == Status.ERROR
    assert (trajectory.error.type, trajectory.error.message) == (
        "ExtensionLoadError",
        "MCP server 'shout': failed",
    )


def test_mcp_and_settings_files_stay_evaluator_protected():
    assert {".mcp.json", "settings.json", ".claude-plugin/plugin.json#mcpServers"} <= set(
        ClaudeCode.protected
    )
