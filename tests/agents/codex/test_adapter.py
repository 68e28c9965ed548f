"""`type: codex` end to end: the snapshot's own Python core in its own process, inside the
jail, behind the model gateway, on the real offline simulator's Responses API."""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import ValidationError

from flashrsi_dagster.agents import AgentConfigError, harness_components, target_agent, worker_agent
from flashrsi_dagster.agents.base import TaskEnvironment
from flashrsi_dagster.benchmarks.text_classification import TextClassification
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.records import REDACTED, Status, Trajectory
from flashrsi_dagster.snapshots import SnapshotStore
from flashrsi_dagster.views.messages import tool_calls
from tests.agents.codex.conftest import (
    call,
    outputs,
    patch,
    requests_for,
    role,
    shell,
    tool_names,
    tree_digest,
)
from tests.agents.conftest import live_commands, timed_out_while_running
from tests.conftest import CANARY_ENV, PATIENCE, needs_jails, wait_until

pytestmark = needs_jails

RULES = """
## Labels
- positive when the text mentions: loved, great
- negative when the text mentions: awful, boring
"""


def test_a_text_classification_target_answers_through_simulator_target(
    server, harness_dir, tmp_path
):
    (harness_dir / "AGENTS.md").write_text((harness_dir / "AGENTS.md").read_text() + RULES)
    data = tmp_path / "data.jsonl"
    rows = [
        {"id": "a", "text": "I loved it, a great film", "label": "positive"},
        {"id": "b", "text": "an awful, boring plot", "label": "negative"},
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    benchmark = TextClassification(data)

    with target_agent(role(server, "simulator/target"), harness_dir) as agent:
        scored = [benchmark.rollout(agent, t, split="dev", attempt=0) for t in benchmark.tasks()]

    assert [(t.status, t.answer, t.score) for t in scored] == [
        (Status.SUCCESS, "positive", 1.0),
        (Status.SUCCESS, "negative", 1.0),
    ]
    assert scored[0].usage.input_tokens > 0 and scored[0].usage.turns == 1


def test_a_worker_edit_by_apply_patch_on_a_snapshot_checkout_is_committed(
    server, harness_dir, tmp_path
):
    worker_role = role(server, "worker-edit")
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(harness_dir, harness_components(worker_role))
    checkout = store.check_out(seed, tmp_path / "checkout")
    server.add_script(
        "worker-edit",
        [
            shell("sed -n 1,3p AGENTS.md"),
            patch(
                "*** Update File: AGENTS.md",
                "@@",
                " # Working agreements",
                "+",
                "+- Answer with the bare label when asked to classify.",
            ),
            "Added a rule to AGENTS.md.",
        ],
    )

    with worker_agent(worker_role) as agent:
        trajectory = agent.edit(checkout, "Improve AGENTS.md", task_id="edit-1")
    outcome = store.commit_child(seed, checkout, message="codex worker edit")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == "Added a rule to AGENTS.md."
    calls = tool_calls(trajectory.messages)  # as the views read every adapter's record
    assert [c.name for c in calls] == ["shell", "apply_patch"]
    assert calls[0].result.startswith("# Working agreements")
    assert calls[1].result.endswith("M AGENTS.md") and not calls[1].failed
    assert outcome.status == "committed", outcome.reason
    assert [c.path for c in outcome.changed] == ["AGENTS.md"]
    assert b"- Answer with the bare label" in store.read_file_at(outcome.snapshot, "AGENTS.md")


def test_config_toml_limits_are_protected_and_the_rest_evolvable(harness_dir, tmp_path):
    config = RoleConfig.model_validate({"type": "codex", "llm": {"model": "m", "api": "responses"}})
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(harness_dir, harness_components(config))

    def edited(name: str, old: str, new: str):
        checkout = store.check_out(seed, tmp_path / name)
        toml = checkout / "config.toml"
        toml.write_text(toml.read_text().replace(old, new))
        return store.commit_child(seed, checkout, message=name)

    loosened = edited("loosen", "shell_timeout = 120", "shell_timeout = 9999")
    assert loosened.status == "refused"
    assert "evaluator-protected (config.toml#limits): changed `limits`" in loosened.reason
    assert edited("feature", "update_plan = true", "update_plan = false").status == "committed"


@pytest.mark.parametrize("jailed", [True, False], ids=["jailed", "unconfined"])
def test_the_project_doc_and_skills_are_task_input_and_the_hosts_codex_is_never_read(
    server, harness_dir, work, tmp_path, monkeypatch, jailed
):
    host = tmp_path / "host-home"
    (host / ".codex" / "skills" / "host-skill").mkdir(parents=True)
    (host / ".codex" / "AGENTS.md").write_text("HOST-CODEX-MARKER\n")
    (host / ".codex" / "skills" / "host-skill" / "SKILL.md").write_text("---\nname: h\n---\n")
    monkeypatch.setenv("HOME", str(host))
    monkeypatch.setenv("CODEX_HOME", str(host / ".codex"))
    (work / "AGENTS.md").write_text("PROJECT-DOC-MARKER: run the tests first.\n")
    (work / ".agents" / "skills" / "deploy").mkdir(parents=True)
    (work / ".agents" / "skills" / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: how this project deploys\n---\n"
    )
    bundle = harness_dir / "plugins" / "cache" / "notes"
    (bundle / "skills" / "tip").mkdir(parents=True)
    (bundle / "skills" / "tip" / "SKILL.md").write_text("---\ndescription: a plugin tip\n---\n")
    with (harness_dir / "config.toml").open("a") as config:
        config.write("\n[plugins.notes]\nenabled = true\n")
    script = f"context-{jailed}"
    server.add_script(script, ["ok"])
    confinement = Confinement(jailed=jailed)

    with target_agent(role(server, script), harness_dir, confinement=confinement) as agent:
        trajectory = agent.run(work, "Say ok", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    body = requests_for(server, script)[0].body
    assert "# Working agreements" in body["instructions"]  # the snapshot's AGENTS.md
    for listed in ("- patching: how to write", "- notes:tip: a plugin tip", "- deploy: how this"):
        assert listed in body["instructions"]
    assert "PROJECT-DOC-MARKER" in json.dumps(body["input"])
    assert body["input"][-1] == {"role": "user", "content": "Say ok"}
    assert "HOST-CODEX-MARKER" not in json.dumps(body) and "host-skill" not in json.dumps(body)


def test_each_call_gets_a_fresh_home_with_a_shell_snapshot(server, harness_dir, work):
    server.add_script(
        "homes",
        [
            shell(
                "echo $CODEX_HOME; ls $CODEX_HOME/shell_snapshots; echo leak > "
                "$CODEX_HOME/skills/leak.md; mkdir -p $CODEX_HOME/plugins/data/x"
            ),
            "first",
            shell("echo $CODEX_HOME; ls $CODEX_HOME/skills; ls -d $CODEX_HOME/plugins/data"),
            "second",
        ],
    )
    before = tree_digest(harness_dir)
    with target_agent(role(server, "homes"), harness_dir) as agent:
        first = agent.run(work, "one", task_id="1")
        second = agent.run(work, "two", task_id="2")

    one, two = outputs(first)[0], outputs(second)[0]
    home_one, snapshot = one.splitlines()[:2]
    assert snapshot.endswith(".sh")  # created at session start, before the first command
    assert two.splitlines()[0] != home_one
    assert "patching" in two and "leak.md" not in two
    assert "plugins/data': No such file" in two  # run state stays with its call
    assert not Path(home_one).exists()  # the home went with the call
    assert tree_digest(harness_dir) == before


def test_budgets_zero_tool_calls_and_a_finite_turn_limit(server, harness_dir, work):
    server.add_script("zero", ["answer without tools"])
    server.add_script("one-turn", [shell("echo 1"), "forced final"])
    two_calls = {"tool_calls": [shell("echo a")["tool_calls"][0], shell("echo b")["tool_calls"][0]]}
    server.add_script("one-call", [two_calls, "final after one call"])

    with target_agent(role(server, "zero", max_tool_calls=0), harness_dir) as agent:
        zero = agent.run(work, "go", task_id="z")
    with target_agent(role(server, "one-turn", max_turns=1), harness_dir) as agent:
        one_turn = agent.run(work, "go", task_id="t")
    with target_agent(role(server, "one-call", max_tool_calls=1), harness_dir) as agent:
        one_call = agent.run(work, "go", task_id="c")

    assert (zero.status, zero.answer, zero.usage.tool_calls) == (
        Status.SUCCESS,
        "answer without tools",
        0,
    )
    [request] = requests_for(server, "zero")
    assert tool_names(request) == [] and "budget for tool use" in json.dumps(request.body["input"])
    assert (one_turn.answer, one_turn.usage.turns, one_turn.usage.tool_calls) == (
        "forced final",
        2,
        1,
    )
    assert [tool_names(r) for r in requests_for(server, "one-turn")] == [
        ["shell", "apply_patch", "update_plan"],
        [],
    ]
    assert (one_call.answer, one_call.usage.tool_calls) == ("final after one call", 1)
    outputs = [
        i
        for i in requests_for(server, "one-call")[1].body["input"]
        if i.get("type") == "function_call_output"
    ]
    assert "exit code 0" in outputs[0]["output"]
    assert "tool-call budget (1) is spent" in outputs[1]["output"]


def test_permissions_read_only_cwd_no_shell_and_denied_tools(server, harness_dir, work):
    server.add_script("read-only", [shell("touch made-here"), "could not"])
    server.add_script("no-shell", ["fine"])
    read_only = role(
        server, "read-only", permissions={"edit": False, "deny_tools": ["update_plan"]}
    )
    with target_agent(read_only, harness_dir) as agent:
        refused = agent.run(work, "touch", task_id="r")
    with target_agent(role(server, "no-shell", permissions={"shell": False}), harness_dir) as agent:
        agent.run(work, "hi", task_id="s")

    assert tool_names(requests_for(server, "read-only")[0]) == ["shell"]
    [touch] = [m for m in refused.messages if m["role"] == "tool"]
    assert touch["exit_code"] != 0 and not (work / "made-here").exists()
    assert tool_names(requests_for(server, "no-shell")[0]) == ["apply_patch", "update_plan"]


def test_role_config_problems_name_the_key(server):
    with pytest.raises(
        AgentConfigError, match=r"agent.permissions.deny_tools: codex has no tool\(s\) 'editor'"
    ):
        target_agent(role(server, "x", permissions={"deny_tools": ["editor"]}))
    with pytest.raises(AgentConfigError, match=r"agent.llm.api: codex does not speak 'chat'"):
        target_agent(role(server, "x", llm={"api": "chat"}))
    with pytest.raises(
        AgentConfigError, match=r"algorithm.worker.permissions.edit: false: the Worker's job"
    ):
        worker_agent(role(server, "x", permissions={"edit": False}))
    with pytest.raises(ValidationError, match="cli_path"):
        role(server, "x", cli_path="/usr/local/bin/codex")


def test_cli_path_in_the_snapshots_config_is_refused_before_anything_runs(
    server, harness_dir, work
):
    (harness_dir / "config.toml").write_text('cli_path = "/usr/local/bin/codex"\n')
    with target_agent(role(server, "never-asked"), harness_dir) as agent:
        trajectory = agent.run(work, "hi", task_id="t")

    assert trajectory.status == Status.ERROR
    assert trajectory.error.type == "AgentConfigError"
    assert "config.toml: cli_path: refused" in trajectory.error.message
    assert requests_for(server, "never-asked") == []


def test_a_capability_not_ported_is_a_config_error_of_the_core(server, harness_dir, work):
    with (harness_dir / "config.toml").open("a") as config:
        config.write('\n[mcp_servers.docs]\ncommand = "docs-server"\n')
    with target_agent(role(server, "no-mcp"), harness_dir) as agent:
        trajectory = agent.run(work, "hi", task_id="t")

    assert (trajectory.status, trajectory.error.type) == (Status.ERROR, "CodexConfigError"), (
        trajectory.metadata
    )
    assert "mcp_servers: MCP servers not ported" in trajectory.error.message


def test_a_core_that_crashes_is_an_error_trajectory_with_its_stderr(server, harness_dir, work):
    (harness_dir / "python_core" / "main.py").write_text(
        "import sys\nsys.stderr.write('core exploded')\nsys.exit(3)\n"
    )
    with target_agent(role(server, "crash"), harness_dir) as agent:
        trajectory = agent.run(work, "hi", task_id="t")

    assert trajectory.status == Status.ERROR
    assert trajectory.error.type == "ProcessError"
    assert "exited with code 3 without starting a session" in trajectory.error.message
    assert trajectory.metadata["stderr_tail"] == "core exploded"


def test_the_key_never_reaches_the_run_or_its_trajectory(server, harness_dir, work, canary):
    script = f"leak-{canary}"  # the simulator's error text names the script: here, the key
    server.add_script(
        script, [shell("env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"), {"error": 500}]
    )
    keyed = role(server, script, llm={"api_key": "${" + CANARY_ENV + "}"})
    with target_agent(keyed, harness_dir) as agent:
        trajectory = agent.run(work, "show me your environment", task_id="t")

    assert trajectory.status == Status.INFRA_ERROR
    assert REDACTED in trajectory.error.message
    assert "CODEX_HOME=" in outputs(trajectory)[0]
    assert canary not in trajectory.model_dump_json()


def test_a_run_past_its_timeout_is_cut_and_leaves_no_process(server, harness_dir, work):
    sleeper = f"sleep 63.{os.getpid()}"  # this test's own, to look for afterwards

    def run(timeout: float, attempt: int) -> Trajectory:
        script = f"slow-{attempt}"
        server.add_script(script, [shell(f"touch started; {sleeper} & {sleeper}")])
        slow = role(server, script, timeout=timeout, llm={"timeout": timeout - 1})
        with target_agent(slow, harness_dir) as agent:
            return agent.run(work, "wait", task_id="t")

    trajectory, timeout = timed_out_while_running(run, work / "started")

    assert trajectory.status == Status.TIMEOUT
    assert f"timeout of {timeout:g} s" in trajectory.error.message
    assert live_commands(sleeper) == []  # the command and what it left in the background


def test_unconfined_background_processes_end_with_the_session(server, harness_dir, work):
    server.add_script("bg", [shell("sleep 900 & echo $! > bg.pid"), "done"])
    unconfined = Confinement(jailed=False)
    with target_agent(role(server, "bg"), harness_dir, confinement=unconfined) as agent:
        trajectory = agent.run(work, "start a service", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    pid = int((work / "bg.pid").read_text())
    wait_until(lambda: not _alive(pid), "the background process ended", timeout=120)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and os.path.exists(f"/proc/{pid}")


def _failed(task_id: str, text: str, expected: str) -> str:
    return Trajectory(
        task_id=task_id,
        split="dev",
        snapshot_id="a" * 40,
        status=Status.FAILURE,
        answer="ham",
        score=0.0,
        messages=[{"role": "user", "content": f"Labels: spam, ham\nText: {text}"}],
        metadata={"expected": expected},
    ).model_dump_json()


def test_simulator_worker_improves_agents_md_through_codex_tools(server, harness_dir, tmp_path):
    agents_md = harness_dir / "AGENTS.md"
    agents_md.write_text(agents_md.read_text() + "- ham when the text mentions: meeting\n")
    worker_role = role(server, "simulator/worker")
    store = SnapshotStore(tmp_path / "store")
    seed = store.create_seed(harness_dir, harness_components(worker_role))
    checkout = store.check_out(seed, tmp_path / "checkout")
    (checkout / ".history").mkdir()
    failures = {
        "t1": ("You won the lottery! Claim your prize now", "spam"),
        "t2": ("Lottery results: send your bank details", "spam"),
        "t3": ("The agenda for the quarterly review", "ham"),
    }
    for task_id, (text, expected) in failures.items():
        (checkout / ".history" / f"{task_id}.json").write_text(_failed(task_id, text, expected))

    with worker_agent(worker_role) as agent:
        trajectory = agent.edit(
            checkout, "Improve the classifier.\nHistory: .history\nPrompt file: AGENTS.md\n",
            task_id="edit",
        )  # fmt: skip
    shutil.rmtree(checkout / ".history")
    outcome = store.commit_child(seed, checkout, message="simulator worker via codex")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert [m.get("name") for m in trajectory.messages if m["role"] == "tool"] == [
        "shell", "shell", "shell", "shell", "shell", "apply_patch",
    ]  # fmt: skip
    assert outcome.status == "committed", outcome.reason
    text = store.read_file_at(outcome.snapshot, "AGENTS.md").decode()
    assert "- ham when the text mentions: meeting, agenda" in text
    assert "- spam when the text mentions: lottery" in text


def test_hooks_add_session_context_and_can_block_a_tool_call(server, harness_dir, work):
    hooks = {
        "hooks": {
            "SessionStart": [{"command": ["bash", "-c", "echo SESSION-HOOK-NOTE"]}],
            "PreToolUse": [{"command": ["bash", "-c", "cat >/dev/null; echo not today; exit 2"]}],
        }
    }
    (harness_dir / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    server.add_script("hooked", [shell("touch hooked"), "blocked, so done"])
    with target_agent(role(server, "hooked"), harness_dir) as agent:
        trajectory = agent.run(work, "touch a file", task_id="t")

    assert trajectory.status == Status.SUCCESS, trajectory.error
    first, second = requests_for(server, "hooked")
    assert "SESSION-HOOK-NOTE" in json.dumps(first.body["input"])
    assert "Error: blocked by a hook: not today" in json.dumps(second.body["input"])
    assert outputs(trajectory) == ["Error: blocked by a hook: not today"]
    assert not (work / "hooked").exists()


def test_a_task_environment_runs_the_shell_there_and_drops_apply_patch(server, harness_dir, work):
    server.add_script(
        "environment", [shell("id -u"), call("shell", command=["printf", "%s", "a b"]), "done"]
    )
    outside = TaskEnvironment(shell_prefix=("bash", "-c"))  # the framework's side of the bridge
    with target_agent(role(server, "environment"), harness_dir) as agent:
        trajectory = agent.run(work, "look around", task_id="t", environment=outside)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert outputs(trajectory) == [f"{os.getuid()}\n", "a b"]  # not the jail's user
    first = requests_for(server, "environment")[0]
    assert tool_names(first) == ["shell", "update_plan"]
    assert "This task has its own environment" in first.body["instructions"]


def test_no_count_limit_runs_128_tool_calls(server, harness_dir, work):
    plan = call("update_plan", plan=[{"step": "go on", "status": "in_progress"}])
    server.add_script("many", [plan] * 128 + ["done after 128"])
    unlimited = role(server, "many", max_turns=None, max_tool_calls=None)
    with target_agent(unlimited, harness_dir) as agent:
        trajectory = agent.run(work, "keep planning", task_id="t")

    assert (trajectory.status, trajectory.answer) == (Status.SUCCESS, "done after 128")
    assert (trajectory.usage.turns, trajectory.usage.tool_calls) == (129, 128)


def test_close_cancels_a_run_in_flight_and_the_core_reports_it(server, harness_dir, work):
    server.add_script("cancel", [shell("touch running; sleep 300"), "never"])
    with target_agent(role(server, "cancel"), harness_dir) as agent, ThreadPoolExecutor(1) as pool:
        running = pool.submit(agent.run, work, "wait", task_id="t")
        wait_until((work / "running").exists, "the shell command started")
        agent.close()
        trajectory = running.result(timeout=PATIENCE)

    # SIGTERM, and the core ends within the grace period: after it, a SIGKILL leaves no report
    assert (trajectory.status, trajectory.error.type) == (Status.ERROR, "Cancelled"), (
        trajectory.messages,
        trajectory.metadata,
    )
