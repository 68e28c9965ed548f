"""MiniAgent end to end: the real entry subprocess, the real OpenAI SDK, the offline simulator."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent, worker_agent
from flashrsi_dagster.agents.miniagent import launcher
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.agents.miniagent.launcher import ENTRY
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import REDACTED, Status, Trajectory
from tests.agents.conftest import timed_out_while_running
from tests.agents.miniagent.conftest import assert_group_gone
from tests.conftest import CANARY_ENV, PATIENCE, needs_jails, wait_until


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


@pytest.fixture
def harness_dir(tmp_path: Path) -> Path:
    """A copy of the built-in harness with one folder skill."""
    folder = tmp_path / "harness"
    shutil.copytree(HARNESS, folder)
    skill = folder / "skills" / "greeting"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\ndescription: how to greet\n---\nAlways greet with the word 'howdy'.\n"
    )
    return folder


def _role(server, script: str, **fields) -> RoleConfig:
    llm = {
        "model": f"simulator/script:{script}",
        "base_url": server.url,
        "max_retries": 0,
        **fields.pop("llm", {}),
    }
    return RoleConfig.model_validate({"type": "miniagent", "llm": llm, **fields})


def _call(tool: str, **arguments) -> dict:
    return {"name": tool, "arguments": arguments}


def test_scripted_task_uses_read_skill_shell_and_editor(server, harness_dir, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    server.add_script(
        "e2e",
        [
            {"tool_calls": [_call("read_skill", name="greeting")]},
            {
                "tool_calls": [
                    _call("shell", command="echo hello > greeting.txt && cat greeting.txt")
                ]
            },
            {
                "tool_calls": [
                    _call(
                        "editor",
                        command="str_replace",
                        path="greeting.txt",
                        old_str="hello",
                        new_str="howdy",
                    )
                ]
            },
            {"tool_calls": [_call("editor", command="view", path="greeting.txt")]},
            {"text": "done: howdy"},
        ],
    )
    with target_agent(_role(server, "e2e"), harness_dir) as agent:
        trajectory = agent.run(work, "Greet in greeting.txt", task_id="greet", split="dev")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == "done: howdy"
    assert (work / "greeting.txt").read_text() == "howdy\n"
    roles = [m["role"] for m in trajectory.messages]
    assert roles[:3] == ["run_config", "system", "user"]
    assert roles.count("tool") == 4
    tool_outputs = [m["content"] for m in trajectory.messages if m["role"] == "tool"]
    assert "Always greet with the word 'howdy'." in tool_outputs[0]
    assert "description:" not in tool_outputs[0]
    assert "hello" in tool_outputs[1]
    assert "how to greet" in trajectory.messages[1]["content"]  # skill listed in the prompt
    usage = trajectory.usage
    assert (usage.turns, usage.tool_calls, usage.model_calls) == (5, 4, 5)
    assert usage.input_tokens > 0 and usage.output_tokens > 0


CLAIMED_TURNS = """

# Answers from a table, never calling the model, and reports the turns an honest run makes.
def run(params, on_step=None):
    usage = {"input_tokens": 900, "output_tokens": 9, "turns": 3, "tool_calls": 0}
    return {"status": "completed", "answer": "benign", "error": None, "error_kind": None,
            "messages": [], "usage": usage, "beacons": {}}
"""


def test_model_calls_and_tokens_are_the_gateway_s_count_not_the_harness_s(
    server, harness_dir, tmp_path
):
    """A harness that answers without its model and claims an honest run's usage: the
    trajectory keeps its claimed turns, but the calls and tokens are what the gateway saw
    (the behaviour signal reads those, `stats.behaviour`)."""
    with (harness_dir / "runtime" / "agent.py").open("a") as agent_py:
        agent_py.write(CLAIMED_TURNS)
    work = tmp_path / "work"
    work.mkdir()
    server.add_script("claimed", [{"text": "malicious"}])
    with target_agent(_role(server, "claimed"), harness_dir) as agent:
        trajectory = agent.run(work, "Classify", task_id="t", split="dev")

    assert trajectory.status == Status.SUCCESS and trajectory.answer == "benign"
    usage = trajectory.usage
    assert usage.turns == 3  # the harness's word, kept as it said
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (0, 0, 0)


def test_a_command_that_outlives_its_timeout_leaves_no_process(server, harness_dir, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    command = "echo $$ > pgid; sleep 300 & touch started; sleep 300"

    def run(timeout: float, attempt: int) -> Trajectory:
        script = f"timeout-{attempt}"
        shell = _call("shell", command=command, timeout=timeout)
        server.add_script(script, [{"tool_calls": [shell]}, {"text": "gave up"}])
        with target_agent(_role(server, script), harness_dir) as agent:
            return agent.run(work, "wait", task_id="t")

    trajectory, timeout = timed_out_while_running(run, work / "started", first=1)

    assert trajectory.status == Status.SUCCESS
    assert f"timed out after {timeout:g} s" in trajectory.messages[-2]["content"]
    assert_group_gone(int((work / "pgid").read_text()))


def test_run_timeout_cancels_and_keeps_the_partial_trajectory(server, harness_dir, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    command = "echo started; echo $$ > pgid; touch started; sleep 300"

    def run(timeout: float, attempt: int) -> Trajectory:
        script = f"hang-{attempt}"
        shell = _call("shell", command=command)
        server.add_script(script, [{"tool_calls": [shell]}, {"text": "never reached"}])
        hanging = _role(server, script, timeout=timeout, llm={"timeout": timeout - 1})
        with target_agent(hanging, harness_dir) as agent:
            return agent.run(work, "wait forever", task_id="t")

    trajectory, _ = timed_out_while_running(run, work / "started", first=6)

    assert trajectory.status == Status.TIMEOUT
    assert [m["role"] for m in trajectory.messages][:4] == [
        "run_config",
        "system",
        "user",
        "assistant",
    ]
    assert_group_gone(int((work / "pgid").read_text()))


def test_sigterm_to_the_entry_yields_a_partial_result(server, harness_dir, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    output = tmp_path / "result.json"
    server.add_script(
        "sigterm",
        [
            {"tool_calls": [_call("shell", command="touch running; sleep 300")]},
            {"text": "never reached"},
        ],
    )
    payload = {
        "output": str(output),
        "files_dir": str(harness_dir),
        "working_dir": str(work),
        "instruction": "wait",
        "max_turns": 5,
        "llm": {"model": "simulator/script:sigterm", "base_url": server.url, "api_key": "x"},
    }
    entry = subprocess.Popen(
        [sys.executable, str(ENTRY)], stdin=subprocess.PIPE, start_new_session=True
    )
    entry.stdin.write(json.dumps(payload).encode())
    entry.stdin.close()
    wait_until((work / "running").exists, "the shell command started")

    entry.send_signal(signal.SIGTERM)
    entry.wait(timeout=PATIENCE)

    result = json.loads(output.read_text())
    assert result["status"] == "cancelled"  # the entry's own handler, not the signal's default
    assert result["messages"][-1]["role"] == "assistant"  # the partial conversation is kept


def test_canary_key_never_reaches_the_trajectory_or_the_shell(
    server, harness_dir, tmp_path, canary
):
    work = tmp_path / "work"
    work.mkdir()
    server.add_script(
        "canary",
        [
            {"tool_calls": [_call("shell", command=f"env > env.txt; echo {canary}")]},
            {"text": f"the key is {canary}"},
        ],
    )
    role = _role(server, "canary")
    role.llm.api_key = "${" + CANARY_ENV + "}"
    with target_agent(role, harness_dir) as agent:
        trajectory = agent.run(work, "leak it", task_id="t")

    dumped = trajectory.model_dump_json()
    assert canary not in dumped
    assert trajectory.answer == f"the key is {REDACTED}"
    assert canary not in (work / "env.txt").read_text()
    assert CANARY_ENV not in (work / "env.txt").read_text()


@needs_jails
def test_a_forked_run_is_under_the_seccomp_filter(server, harness_dir, tmp_path):
    """The fork server's runs join their jail themselves: they load the filter too."""
    work = tmp_path / "work"
    work.mkdir()
    probe = "grep ^Seccomp: /proc/self/status; unshare -r id -u; echo rc=$?"
    server.add_script("seccomp", [{"tool_calls": [_call("shell", command=probe)]}, "done"])
    with target_agent(_role(server, "seccomp"), harness_dir) as agent:
        trajectory = agent.run(work, "probe", task_id="t")

    (output,) = [m["content"] for m in trajectory.messages if m["role"] == "tool"]
    assert "Seccomp:\t2" in output and "rc=1" in output, output


def test_miniagent_can_be_the_worker(server, harness_dir):
    worker = worker_agent(_role(server, "unused"), harness_dir)
    worker.close()


def test_miniagent_refuses_the_anthropic_api(server, harness_dir):
    role = _role(server, "unused")
    role.llm.api = "anthropic"
    with pytest.raises(Exception, match="OpenAI-compatible"):
        target_agent(role, harness_dir)


def test_agents_share_one_warm_fork_server_and_close_kills_only_their_own_runs(
    server, harness_dir, tmp_path
):
    work = tmp_path / "work"
    work.mkdir()
    server.add_script(
        "closed-mid-run",
        [{"tool_calls": [_call("shell", command="sleep 307")]}, "unreached"],
    )
    server.add_script("warm", ["done"])
    first = target_agent(
        _role(server, "closed-mid-run", timeout=120, llm={"timeout": 60}), harness_dir
    )
    second = target_agent(_role(server, "warm"), harness_dir)
    assert second.run(work, "warm up", task_id="t").status == Status.SUCCESS
    servers = {key: s._process.pid for key, s in launcher._shared.items() if s._process}

    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(first.run, work, "sleep", task_id="t")
        wait_until(lambda: _pids("sleep 307"), "the shell command started")
        first.close()
        trajectory = running.result(timeout=PATIENCE)
    assert trajectory.status != Status.SUCCESS
    assert not _pids("sleep 307")
    # a later round's agent starts warm: the same server, still running
    assert {key: s._process.pid for key, s in launcher._shared.items() if s._process} == servers
    assert all(s._process.poll() is None for s in launcher._shared.values() if s._process)
    second.close()


def _pids(pattern: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
