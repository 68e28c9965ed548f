"""The role's budgets and permissions hold for the real CLI: a tool-call budget the snapshot
cannot change, turns that tell none from zero, and tools (and the folder) a role may not use."""

from __future__ import annotations

import json

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.records import Status
from tests.agents.claude_code.conftest import call, requests_for, role


def _results(trajectory) -> list[tuple[bool, str]]:
    """(is_error, text) of every tool result, in order."""
    return [
        (bool(block["is_error"]), str(block["content"]))
        for message in trajectory.messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


@pytest.mark.parametrize("limit", [2, 0])
def test_tool_calls_past_the_budget_are_refused_and_the_run_answers(
    server, harness_dir, work, limit
):
    # The snapshot's own hook approves every call: the framework's refusal still holds.
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    hook = {"type": "command", "command": f"echo >> approved.log; echo '{json.dumps(allow)}'"}
    (harness_dir / "hooks" / "hooks.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"hooks": [hook]}]}})
    )
    script = f"budget-{limit}"
    server.add_script(
        script, [call("Bash", command=f"echo {i} >> calls.txt") for i in range(3)] + ["done"]
    )
    with target_agent(role(server, script, max_tool_calls=limit), harness_dir) as agent:
        trajectory = agent.run(work, "Count", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == "done"
    assert len((work / "approved.log").read_text().splitlines()) == 3  # it approved them all
    ran = (work / "calls.txt").read_text().split() if limit else []
    assert ran == [str(i) for i in range(limit)]
    refused = [text for failed, text in _results(trajectory) if failed]
    assert len(refused) == 3 - limit
    assert all(f"at most {limit} tool call(s)" in text for text in refused)
    assert trajectory.metadata["tool_budget"] == {
        "limit": limit,
        "allowed": limit,
        "refused": 3 - limit,
    }


def test_zero_turns_offers_no_tool_and_the_model_answers(server, mcp_harness, work):
    # MCP servers from .mcp.json and from the plugin manifest: neither is offered either.
    servers = json.loads((mcp_harness / ".mcp.json").read_text())["mcpServers"]
    (mcp_harness / ".claude-plugin").mkdir()
    manifest = {"name": "harness", "version": "1.0.0", "mcpServers": servers}
    (mcp_harness / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    server.add_script("no-turns", ["just the answer"])
    with target_agent(role(server, "no-turns", max_turns=0), mcp_harness) as agent:
        trajectory = agent.run(work, "Answer", task_id="t")

    assert (trajectory.status, trajectory.answer) == (Status.SUCCESS, "just the answer")
    [request] = requests_for(server, "no-turns")
    assert request.body.get("tools", []) == []


def test_without_edit_the_folder_is_read_only_and_the_edit_tools_are_gone(server, work):
    (work / "keep.txt").write_text("original\n")
    server.add_script(
        "read-only",
        [
            call("Write", file_path=str(work / "keep.txt"), content="changed\n"),
            call("Bash", command="echo changed > keep.txt; touch new.txt"),
            "could not edit",
        ],
    )
    permissions = {"edit": False, "deny_tools": ["WebFetch"]}
    with target_agent(role(server, "read-only", permissions=permissions)) as agent:
        trajectory = agent.run(work, "Edit keep.txt", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    write, shell = _results(trajectory)
    assert write[0] and "No such tool available: Write" in write[1]
    assert shell[0] and "Read-only file system" in shell[1]
    assert (work / "keep.txt").read_text() == "original\n"
    assert sorted(p.name for p in work.iterdir()) == ["keep.txt"]
    offered = {tool["name"] for tool in requests_for(server, "read-only")[0].body["tools"]}
    assert offered.isdisjoint({"Write", "Edit", "NotebookEdit", "WebFetch"})
    assert "Bash" in offered
