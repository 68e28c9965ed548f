"""How a session ends decides the trajectory: a CLI that dies (the SDK raises), an interrupt
(`error_during_execution`) and a session a hook stops are the agent's errors, with
redacted diagnostics; sub-agents' replies are recorded with their parent ids."""

from __future__ import annotations

import json

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.records import REDACTED, Status
from tests.agents.claude_code.conftest import call, role
from tests.conftest import CANARY_ENV


def test_a_cli_that_dies_is_an_error_trajectory_with_the_sdks_exception(server, work, canary):
    server.add_script("killed", [call("Bash", command=f"echo {canary}; kill -9 $PPID")])
    keyed = role(server, "killed", llm={"api_key": "${" + CANARY_ENV + "}"})
    with target_agent(keyed) as agent:
        trajectory = agent.run(work, f"die {canary}", task_id="t")

    assert trajectory.status == Status.ERROR
    assert trajectory.error.type == "ProcessError"
    assert "exit code -9" in trajectory.error.message
    assert [m["type"] for m in trajectory.messages[-2:]] == ["system", "assistant"]
    assert REDACTED in trajectory.messages[1]["content"]
    assert canary not in trajectory.model_dump_json()


def test_an_interrupt_is_an_error_during_execution(server, work):
    # The sleep outlasts a loaded machine's reaction to the interrupt: the tool is still running.
    server.add_script("interrupt", [call("Bash", command="kill -INT $PPID; sleep 120"), "late"])
    with target_agent(role(server, "interrupt")) as agent:
        trajectory = agent.run(work, "wait", task_id="t")

    assert trajectory.status == Status.ERROR  # the agent's own ending, never a success
    if trajectory.error.type == "SessionError":
        # Under load the CLI was seen to exit on the interrupt before writing its result
        # (its own race, once in a fresh-clone run at load ~8): no result is an error too.
        assert trajectory.error.message == "the Claude Code session gave no result"
        return
    assert trajectory.error.type == "ResultError"
    assert trajectory.error.message.startswith("error_during_execution")
    assert trajectory.metadata["terminal_reason"] == "aborted_tools"


def test_a_session_a_hook_stops_is_not_a_success(server, harness_dir, work):
    stop = {"continue": False, "stopReason": "paused by the harness"}
    hook = {"type": "command", "command": f"echo '{json.dumps(stop)}'"}
    (harness_dir / "hooks" / "hooks.json").write_text(
        json.dumps({"hooks": {"PostToolUse": [{"hooks": [hook]}]}})
    )
    server.add_script("paused", [call("Bash", command="true"), "never asked"])
    with target_agent(role(server, "paused"), harness_dir) as agent:
        trajectory = agent.run(work, "work", task_id="t")

    assert trajectory.status == Status.ERROR
    assert trajectory.error.type == "SessionStopped"
    assert "hook_stopped" in trajectory.error.message


def test_sub_agent_messages_carry_their_parent_id_and_count_against_the_budget(
    server, harness_dir, work
):
    server.add_script(
        "delegate",
        [
            call(
                "Agent",
                description="ask the helper",
                prompt="Run true.",
                subagent_type="harness:helper",
                run_in_background=False,
            ),
            call("Bash", command="touch by-helper.txt"),  # the helper's call: over budget
            {"text": "could not"},
            {"text": "the helper could not"},
        ],
    )
    with target_agent(role(server, "delegate", max_tool_calls=1), harness_dir) as agent:
        trajectory = agent.run(work, "Delegate", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    by_helper = [m for m in trajectory.messages if m.get("parent_tool_use_id") == "call_1"]
    # The helper's prompt, its tool call and its reply, each marked with the Agent call's id.
    assert [m["role"] for m in by_helper] == ["user", "assistant", "assistant"]
    assert by_helper[0]["content"] == [{"type": "text", "text": "Run true."}]
    assert by_helper[-1]["content"] == [{"type": "text", "text": "could not"}]
    assert trajectory.metadata["subagents"]["call_1"]["replies"] == ["could not"]
    assert trajectory.metadata["tool_budget"]["refused"] == 1
    assert not (work / "by-helper.txt").exists()
