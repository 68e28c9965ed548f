"""MiniAgent's permissions, web, `debug_llm_io` and settings from the payload alone, on scripted
models through the real simulator, jail and gateway."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent, worker_agent
from flashrsi_dagster.agents.base import AgentConfigError, TaskEnvironment
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.agents.miniagent.launcher import ENTRY
from flashrsi_dagster.agents.permissions import VIOLATION
from flashrsi_dagster.agents.roles import WorkerConfigError
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import REDACTED, Status, Trajectory
from tests.conftest import PATIENCE, needs_jails
from tests.sabotage.helpers import editor, say, shell, unique


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("original\n")
    return folder


def _role(server, script: list[dict], **fields) -> tuple[RoleConfig, str]:
    name = unique("perm")
    server.add_script(name, script)
    llm = {"model": f"simulator/script:{name}", "base_url": server.url, "max_retries": 0}
    return RoleConfig.model_validate({"type": "miniagent", "llm": llm, **fields}), (
        f"simulator/script:{name}"
    )


def _offered(server, model: str) -> list[list[str]]:
    """The tool names each model request offered, in order."""
    return [
        [tool["function"]["name"] for tool in r.body.get("tools", [])]
        for r in server.requests
        if r.model == model and r.body is not None
    ]


def _run(role: RoleConfig, work: Path, harness: Path = HARNESS) -> Trajectory:
    with target_agent(role, harness) as agent:
        return agent.run(work, "work", task_id="t")


def _outputs(trajectory: Trajectory) -> list[str]:
    return [m["content"] for m in trajectory.messages if m["role"] == "tool"]


@needs_jails
def test_edit_false_mounts_the_folder_read_only_and_offers_a_viewing_editor(server, work):
    script = [
        shell("echo changed > notes.txt; echo new > new.txt"),
        editor("create", "made.txt", file_text="x"),
        editor("view", "notes.txt"),
        say("looked only"),
    ]
    role, model = _role(server, script, permissions={"edit": False})

    trajectory = _run(role, work)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert (work / "notes.txt").read_text() == "original\n"
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt"]
    shell_out, create_out, view_out = _outputs(trajectory)
    assert "Read-only file system" in shell_out
    assert create_out == "Error: 'create' is not allowed: this run may not change files"
    assert "original" in view_out
    editor_schema = next(
        t["function"]
        for t in _requests(server, model)[0]["tools"]
        if t["function"]["name"] == "editor"
    )
    assert editor_schema["parameters"]["properties"]["command"]["enum"] == ["view"]


def _requests(server, model: str) -> list[dict]:
    return [r.body for r in server.requests if r.model == model and r.body is not None]


@needs_jails
def test_shell_false_and_deny_tools_withhold_those_tools(server, work):
    role, model = _role(
        server,
        [shell("touch ran"), say("no shell")],
        permissions={"shell": False, "deny_tools": ["editor"]},
    )

    trajectory = _run(role, work)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert not (work / "ran").exists()
    assert _outputs(trajectory) == ["Error: unknown tool 'shell'; available: "]
    assert _offered(server, model) == [[], []]


@needs_jails
def test_the_gateway_refuses_a_harness_that_offers_a_withheld_tool(server, work, tmp_path):
    hostile = tmp_path / "hostile"
    shutil.copytree(HARNESS, hostile)
    agent_py = hostile / "runtime/agent.py"
    source = agent_py.read_text()
    agent_py.write_text(
        source.replace("permitted_tools(tools, ctx,", "(lambda t, *_: t)(tools, ctx,")
    )
    assert agent_py.read_text() != source
    role, model = _role(server, [shell("touch ran"), say("x")], permissions={"shell": False})

    trajectory = _run(role, work, hostile)

    assert trajectory.status == Status.ERROR and trajectory.error.type == VIOLATION
    assert "offers the model shell" in trajectory.error.message
    assert not (work / "ran").exists()
    assert _offered(server, model) == []  # no request reached the model


def test_edit_false_in_a_task_environment_is_an_error_not_a_silent_pass(server, work):
    role, model = _role(server, [say("never asked")], permissions={"edit": False})
    environment = TaskEnvironment(shell_prefix=("docker", "exec", "task", "bash", "-c"))

    with target_agent(role, HARNESS) as agent:
        trajectory = agent.run(work, "work", task_id="t", environment=environment)

    assert trajectory.status == Status.ERROR
    assert "agent.permissions.edit: false cannot be enforced" in trajectory.error.message
    assert _offered(server, model) == []


def test_deny_tools_naming_no_tool_is_a_config_problem(server, tmp_path):
    role, _ = _role(server, [say()], permissions={"deny_tools": ["shell", "Bash"]})

    with pytest.raises(AgentConfigError, match=r"agent\.permissions\.deny_tools: .*'Bash'"):
        target_agent(role, HARNESS)


def test_a_worker_that_may_not_edit_is_refused(server):
    role, _ = _role(server, [say()], permissions={"edit": False})

    with pytest.raises(WorkerConfigError, match=r"algorithm\.worker\.permissions\.edit: false"):
        worker_agent(role, HARNESS)


@needs_jails
def test_the_web_is_off_by_default_and_fetched_through_the_gateway_when_on(server, work):
    url = "https://example.org/page"
    off, off_model = _role(server, [say("no web")])
    searched = {"name": "web_search", "arguments": {"query": "budget semantics"}}
    on, on_model = _role(
        server,
        [
            {"tool_calls": [searched, {"name": "web_fetch", "arguments": {"url": url}}]},
            say("read it"),
        ],
        web={"enabled": True, "source": "simulator"},
    )

    assert _run(off, work).status == Status.SUCCESS
    trajectory = _run(on, work)

    assert {"web_fetch", "web_search"}.isdisjoint(_offered(server, off_model)[0])
    assert {"web_fetch", "web_search"} <= set(_offered(server, on_model)[0])
    assert trajectory.status == Status.SUCCESS, trajectory.error
    results, page = _outputs(trajectory)
    assert "Offline simulator results for budget semantics" in results
    assert page.startswith("HTTP 200 text/plain") and f"Offline simulator page for {url}" in page


@needs_jails
def test_without_a_search_page_only_the_fetch_is_offered(server, work):
    role, model = _role(server, [say("ok")], web={"enabled": True})

    assert _run(role, work).status == Status.SUCCESS
    assert "web_fetch" in _offered(server, model)[0]
    assert "web_search" not in _offered(server, model)[0]


def test_an_adapter_without_web_tools_refuses_web_enabled(server):
    role = RoleConfig.model_validate(
        {"type": "llm", "llm": {"model": "m", "base_url": server.url}, "web": {"enabled": True}}
    )
    with pytest.raises(AgentConfigError, match=r"agent\.web\.enabled: llm has no web tools"):
        target_agent(role)


@needs_jails
def test_debug_llm_io_keeps_the_exchanges_redacted_and_nothing_when_off(
    server, work, canary, monkeypatch
):
    script = [shell(f"echo {canary}"), say("done")]
    quiet, _ = _role(server, list(script))
    loud, _ = _role(server, list(script), debug_llm_io=True)
    for role in (quiet, loud):
        role.llm.api_key = "${FLASHRSI_TEST_CANARY_API_KEY}"

    silent, kept = _run(quiet, work), _run(loud, work)

    assert "llm_io" not in silent.metadata
    exchanges = kept.metadata["llm_io"]
    assert len(exchanges) == 2
    assert json.loads(exchanges[0]["request"])["messages"][1]["content"] == "work"
    assert "tool_calls" in json.loads(exchanges[0]["response"])["choices"][0]["message"]
    assert REDACTED in exchanges[1]["request"] and canary not in json.dumps(exchanges)


ENV_KEY = "sk-from-the-environment-0123456789"


def _entry(payload: dict, tmp_path: Path, **env: str) -> dict:
    """A run of the harness's entry with `payload` and exactly `env`: its result."""
    work, output = tmp_path / "work", tmp_path / "result.json"
    work.mkdir(exist_ok=True)
    payload = {
        "output": str(output),
        "files_dir": str(HARNESS),
        "working_dir": str(work),
        "instruction": "hello",
        "max_turns": 1,
        **payload,
    }
    subprocess.run(
        [sys.executable, str(ENTRY)], input=json.dumps(payload).encode(), timeout=PATIENCE,
        env={"PATH": "/usr/bin:/bin", **env}, check=True,
    )  # fmt: skip
    return json.loads(output.read_text())


def test_the_harness_takes_no_base_url_or_key_from_the_environment(tmp_path):
    """The model config comes from the payload alone: with no `base_url` it is not
    `OPENAI_BASE_URL`'s endpoint that is called, and with no key `OPENAI_API_KEY` is not sent
    (an endpoint that accepts only that key refuses the run)."""
    config = ServerConfig(scripts={"trap": [say("trapped")]}, accepted_keys=(ENV_KEY,))
    with OfflineModelServer(config) as trap:
        llm = {"model": "simulator/script:trap", "max_retries": 0, "timeout": 30}  # not 401 late
        unrouted = _entry({"llm": llm}, tmp_path, OPENAI_BASE_URL=trap.url, OPENAI_API_KEY=ENV_KEY)
        assert trap.requests == []
        keyless = _entry({"llm": {**llm, "base_url": trap.url}}, tmp_path, OPENAI_API_KEY=ENV_KEY)

    assert unrouted["status"] == "error" and unrouted["answer"] is None
    assert keyless["status"] == "error"
    assert keyless["error"]["type"] == "AuthenticationError"
    assert [r.status_code for r in trap.requests] == [401]


@needs_jails
def test_the_adapter_ignores_openai_variables_of_the_framework(server, work, monkeypatch):
    """A role with no `base_url` goes to the SDK's public endpoint through the gateway, even
    with `OPENAI_BASE_URL` and `OPENAI_API_KEY` set where the framework runs."""
    with OfflineModelServer(ServerConfig(scripts={"trap": [say("trapped")]})) as trap:
        monkeypatch.setenv("OPENAI_BASE_URL", trap.url)
        monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
        role = RoleConfig.model_validate(
            {
                "type": "miniagent",
                "llm": {"model": "simulator/script:trap", "max_retries": 0, "timeout": 5},
                "timeout": 30,
            }
        )

        trajectory = _run(role, work)

        assert trap.requests == []
    assert trajectory.status != Status.SUCCESS and trajectory.answer is None
