"""Claude Code end to end: the real SDK and its bundled CLI, the real offline simulator."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from flashrsi_dagster.agents import AgentConfigError, target_agent, worker_agent
from flashrsi_dagster.agents.claude_code.adapter import HARNESS, ClaudeCode
from flashrsi_dagster.agents.roles import harness_components
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.records import REDACTED, Status, Trajectory
from flashrsi_dagster.snapshots import SnapshotStore
from tests.agents.claude_code.conftest import (
    CLAUDE_MD_MARKER,
    call,
    live_processes_under,
    requests_for,
    role,
    tree_digest,
)
from tests.agents.conftest import left_in, timed_out_while_running
from tests.conftest import CANARY_ENV, needs_jails


def _tool_uses(trajectory) -> list[str]:
    return [
        block["name"]
        for message in trajectory.messages
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "tool_use"
    ]


def test_the_cli_writes_and_edits_a_file_with_the_snapshots_claude_md(
    server, harness_dir, work, tmp_path, temp_root
):
    server.add_script(
        "edit",
        [
            call("Write", file_path="notes.md", content="hello\n"),
            call("Edit", file_path="notes.md", old_string="hello", new_string="howdy"),
            {"text": "notes written"},
        ],
    )
    snapshot_before = tree_digest(harness_dir)
    with target_agent(role(server, "edit"), harness_dir) as agent:
        trajectory = agent.run(work, "Write notes.md", task_id="notes", split="dev")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert (work / "notes.md").read_text() == "howdy\n"
    assert trajectory.answer == "notes written"
    assert _tool_uses(trajectory) == ["Write", "Edit"]
    assert [m["role"] for m in trajectory.messages[:2]] == ["run_config", "user"]
    assert trajectory.messages[1]["content"] == "Write notes.md"
    assert trajectory.messages[-1]["type"] == "result"
    usage = trajectory.usage
    assert (usage.turns, usage.tool_calls) == (3, 2)
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    first = requests_for(server, "edit")[0]
    assert first.role == "target"  # the x-flashrsi-role header
    assert CLAUDE_MD_MARKER in first.body["system"][-1]["text"]
    assert tree_digest(harness_dir) == snapshot_before
    assert left_in(temp_root) == []
    assert live_processes_under(tmp_path) == []


def test_snapshot_skills_and_sub_agents_load_as_a_plugin(server, harness_dir, work):
    server.add_script(
        "plugin",
        [
            call(
                "Agent",
                description="ask the helper",
                prompt="What is 2 + 2?",
                subagent_type="harness:helper",
                run_in_background=False,  # keeps the script's order: the helper answers second
            ),
            {"text": "four"},
            {"text": "the helper says four"},
        ],
    )
    with worker_agent(role(server, "plugin"), harness_dir) as worker:
        trajectory = worker.run(work, "Ask the helper", task_id="ask")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == "the helper says four"
    requests = requests_for(server, "plugin")
    assert "- harness:greeting: how to greet people in notes" in json.dumps(requests[0].body)
    # The helper's `model: haiku` stays on the role's model and endpoint.
    assert len(requests) == 3 and {r.role for r in requests} == {"worker"}
    subagent = trajectory.metadata["subagents"]["call_1"]
    assert subagent["subagent_type"] == "harness:helper"
    assert (subagent["status"], subagent["replies"]) == ("completed", ["four"])


def test_the_run_waits_for_background_sub_agents_and_counts_their_usage(server, work):
    # Main loop and sub-agent ask concurrently; identical replies make the order irrelevant.
    server.add_script(
        "background",
        [call("Agent", description="look around", prompt="Look.", subagent_type="general-purpose")]
        + ["done"] * 4,
    )
    with target_agent(role(server, "background")) as agent:
        trajectory = agent.run(work, "Delegate", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    subagent = trajectory.metadata["subagents"]["call_1"]
    assert (subagent["status"], subagent["replies"]) == ("completed", ["done"])
    requests = requests_for(server, "background")
    assert len(requests) == 4  # delegate, go on, the sub-agent, take in its report
    assert len([m for m in trajectory.messages if m.get("type") == "result"]) == 2
    assert trajectory.usage.input_tokens == sum(r.input_tokens for r in requests)
    assert trajectory.usage.output_tokens == sum(r.output_tokens for r in requests)


def test_a_snapshot_without_claude_md_gets_the_bare_preset(server, work, tmp_path, temp_root):
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(HARNESS)
    checkout = store.check_out(seed, tmp_path / "checkout")
    snapshot_before = tree_digest(checkout)
    server.add_script("bare", [{"text": "hi"}])
    with target_agent(role(server, "bare"), checkout) as agent:
        trajectory = agent.run(work, "Say hi", task_id="hi")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert store.read_file_at(seed, "hooks/hooks.json")
    system = requests_for(server, "bare")[0].body["system"]
    assert CLAUDE_MD_MARKER not in json.dumps(system)
    assert tree_digest(checkout) == snapshot_before
    assert left_in(temp_root) == []


def test_an_endpoint_error_is_an_infra_error_with_a_redacted_diagnostic(server, work, canary):
    script = f"fail-{canary}"  # the simulator's error text names the script: here, the key
    server.add_script(script, [{"error": 500}])
    failing = role(server, script, llm={"api_key": "${" + CANARY_ENV + "}"})
    with target_agent(failing) as agent:
        trajectory = agent.run(work, "anything", task_id="t")

    assert trajectory.status == Status.INFRA_ERROR
    assert len(requests_for(server, script)) == 1  # max_retries: 0, so no retry after a backoff
    assert "API Error: 500" in trajectory.error.message
    assert REDACTED in trajectory.error.message
    assert REDACTED in trajectory.metadata["stderr_tail"]
    assert canary not in trajectory.model_dump_json()


def test_a_refused_connection_is_an_infra_error(server, work):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = role(server, "unused", llm={"base_url": f"http://127.0.0.1:{port}"})
    with target_agent(closed) as agent:
        trajectory = agent.run(work, "anything", task_id="t")

    assert trajectory.status == Status.INFRA_ERROR
    assert "Connection refused" in trajectory.error.message
    assert trajectory.metadata["terminal_reason"] == "api_error"


def test_running_out_of_turns_is_the_agents_error(server, work):
    server.add_script("loop", [call("Bash", command="true")] * 3)
    with target_agent(role(server, "loop", max_turns=2)) as agent:
        trajectory = agent.run(work, "loop", task_id="t")

    assert trajectory.status == Status.ERROR
    assert "maximum number of turns" in trajectory.error.message
    assert trajectory.metadata["terminal_reason"] == "max_turns"
    assert trajectory.usage.tool_calls == 2


def test_the_timeout_stops_the_cli_and_its_commands(server, work, tmp_path, temp_root):
    def run(timeout: float, attempt: int) -> Trajectory:
        script = f"hang-{attempt}"
        command = f"touch {work / 'started'}; sleep 300"
        server.add_script(script, [call("Bash", command=command), {"text": "never reached"}])
        hanging = role(server, script, timeout=timeout, llm={"timeout": timeout - 1})
        with target_agent(hanging) as agent:
            return agent.run(work, "wait", task_id="t")

    trajectory, timeout = timed_out_while_running(run, work / "started")

    assert trajectory.status == Status.TIMEOUT
    assert trajectory.error.type == "TimeoutError"
    assert f"timeout of {timeout} s" in trajectory.error.message
    assert _tool_uses(trajectory) == ["Bash"]  # the partial transcript and usage are kept
    assert trajectory.usage.turns == 1 and trajectory.usage.input_tokens > 0
    assert live_processes_under(tmp_path) == []  # the `sleep 300` too
    assert left_in(temp_root) == []


def test_the_key_stays_out_of_the_trajectory_and_the_cli_shell(server, work, canary, monkeypatch):
    monkeypatch.setenv("FLASHRSI_TEST_PARENT_TOKEN", "parent-secret-5e1f0a9c")
    server.add_script(
        "leak", [call("Bash", command="env > env.txt"), {"text": f"the key is {canary}"}]
    )
    keyed = role(server, "leak", llm={"api_key": "${" + CANARY_ENV + "}"})
    with target_agent(keyed) as agent:
        trajectory = agent.run(work, f"print {canary}", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == f"the key is {REDACTED}"
    assert trajectory.messages[1]["content"] == f"print {REDACTED}"
    assert canary not in trajectory.model_dump_json()
    shell_env = (work / "env.txt").read_text()
    assert canary not in shell_env
    assert "parent-secret-5e1f0a9c" not in shell_env
    assert CANARY_ENV not in shell_env  # the jail passes an allow-list: not even its name


@pytest.mark.parametrize("caller", ["worker thread", "running event loop"])
def test_run_is_synchronous_from_a_worker_thread_or_inside_an_event_loop(server, work, caller):
    server.add_script(f"sync-{caller}", ["ok"])

    def run():
        with target_agent(role(server, f"sync-{caller}")) as agent:
            return agent.run(work, "say ok", task_id="t")

    async def inside_a_loop():
        return run()

    if caller == "worker thread":
        with ThreadPoolExecutor(max_workers=1) as pool:
            trajectory = pool.submit(run).result()
    else:
        trajectory = asyncio.run(inside_a_loop())

    assert (trajectory.status, trajectory.answer) == (Status.SUCCESS, "ok")


def test_claude_code_can_be_the_worker_on_its_built_in_harness(server):
    worker = worker_agent(role(server, "unused"))

    assert isinstance(worker, ClaudeCode)
    assert worker.files_dir == HARNESS.resolve()


@pytest.mark.parametrize(
    ("build", "key"), [(target_agent, "agent.llm.api"), (worker_agent, "algorithm.worker.llm.api")]
)
def test_an_openai_api_is_refused_naming_the_key(server, build, key):
    chat = role(server, "unused", llm={"api": "chat"})

    with pytest.raises(
        AgentConfigError, match=f"{key}: claude-code does not speak 'chat'.*set {key}: anthropic"
    ):
        build(chat)


def test_settings_the_cli_cannot_honour_are_refused(server):
    warm = role(server, "unused", llm={"temperature": 0.2})

    with pytest.raises(AgentConfigError, match=r"agent\.llm: .* no setting for temperature"):
        target_agent(warm)


def test_a_missing_sdk_asks_for_the_claude_extra(server, monkeypatch):
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)  # makes the import fail

    with pytest.raises(AgentConfigError, match="install the `claude` extra"):
        target_agent(RoleConfig.model_validate(role(server, "unused").model_dump()))


def test_a_worker_edit_on_a_snapshot_checkout_is_committed(server, tmp_path):
    worker_role = role(server, "worker-commit")
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(HARNESS, harness_components(worker_role))
    checkout = store.check_out(seed, tmp_path / "checkout")
    rule = "Answer with the bare label when asked to classify."
    server.add_script(
        "worker-commit",
        [
            call("Write", file_path=str(checkout / "CLAUDE.md"), content=f"# Notes\n\n{rule}\n"),
            "ok",
        ],
    )

    with worker_agent(worker_role) as worker:
        trajectory = worker.edit(checkout, "Write the notes", task_id="edit-1")
    outcome = store.commit_child(seed, checkout, message="claude code worker edit")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert _tool_uses(trajectory) == ["Write"]
    assert outcome.status == "committed", outcome.reason
    assert [c.path for c in outcome.changed] == ["CLAUDE.md"]
    assert rule.encode() in store.read_file_at(outcome.snapshot, "CLAUDE.md")


@needs_jails
def test_the_cli_and_its_commands_are_under_the_seccomp_filter(server, work):
    """The CLI (node) joins its jail through the framework's launcher, which loads the filter
    before executing it: its Bash commands inherit it."""
    probe = "grep ^Seccomp: /proc/self/status; unshare -r id -u 2>&1; echo rc=$?"
    server.add_script("seccomp-cc", [call("Bash", command=f"({probe}) > probe.txt"), "done"])
    with target_agent(role(server, "seccomp-cc")) as agent:
        trajectory = agent.run(work, "probe", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    probe_out = (work / "probe.txt").read_text()
    assert "Seccomp:\t2" in probe_out and "rc=1" in probe_out, probe_out
