"""What a Worker did, from its tool calls: reads, commands, edits and writes, counted."""

from __future__ import annotations

import shutil

import pytest

from flashrsi_dagster.agents import worker_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status
from flashrsi_dagster.views import Action, actions, worker_activity_markdown
from tests.views.conftest import mini_call, mini_messages, trajectory


def _steps(markdown: str) -> list[str]:
    return markdown.split("**Steps**\n", 1)[1].splitlines()


def test_miniagent_tools_become_reads_commands_edits_and_writes_in_order():
    messages = mini_messages(
        (
            None,
            [
                (mini_call("1", "editor", command="view", path="prompts/system.md"), "1\tHi"),
                (
                    mini_call("2", "shell", command="grep -r label history/\n| head"),
                    "Exit code: 1\n",
                ),
                (mini_call("3", "read_skill", name="labels"), "Use the labels."),
            ],
        ),
        (None, [(mini_call("4", "editor", command="str_replace", path="prompts/system.md"), "ok")]),
        (None, [(mini_call("5", "editor", command="insert", path="prompts/system.md"), "ok")]),
        (None, [(mini_call("6", "editor", command="create", path="skills/new.md"), "Created")]),
        (None, [(mini_call("7", "browser", url="https://example.org"), "Error: unknown tool")]),
        (None, [(mini_call("8", "editor", command="undo", path="x"), "Error: unknown command")]),
    )

    markdown = worker_activity_markdown(trajectory(messages))

    assert markdown.startswith(
        "**8 tool calls**: 2 reads · 1 command · 2 edits · 1 write · 2 other tools "
        "(3 failed or without result)\n"
    )
    assert "- **Read** (2): `prompts/system.md`, `skill labels`\n" in markdown
    assert "- **Edited** (1): `prompts/system.md` x2\n" in markdown
    assert "- **Wrote (created or replaced)** (1): `skills/new.md`\n" in markdown
    assert "- **Other tools (not file or command tools)** (2): `browser`, `editor`\n" in markdown
    assert _steps(markdown) == [
        "1. read `prompts/system.md`",
        "2. ran `grep -r label history/ ⏎ | head` — exit 1",
        "3. read `skill labels`",
        "4. edited `prompts/system.md`",
        "5. edited `prompts/system.md`",
        "6. wrote `skills/new.md`",
        "7. other tool `browser` `url='https://example.org'` — failed",
        "8. other tool `editor` `command='undo', path='x'` — failed",
    ]


def test_claude_code_tools_with_paths_relative_to_the_session_folder(claude_messages):
    done = actions(trajectory(claude_messages))

    assert done == [
        Action("read", "prompts/system.md", "Read"),
        Action("ran", "ls history", "Bash"),
        Action("edited", "prompts/system.md", "Edit"),
        Action("wrote", "skills/labels/SKILL.md", "Write"),
        Action("searched", "TODO in prompts", "Grep", "failed"),
        Action("searched", "**/*.md", "Glob"),
        Action("other", "todos=[{'content': 'check', 'status': 'done'}]", "TodoWrite"),
    ]


def test_a_long_step_list_keeps_its_start_and_end():
    calls = [(mini_call(str(n), "shell", command=f"echo {n}"), "Exit code: 0\n") for n in range(30)]
    messages = mini_messages(*((None, [call]) for call in calls))

    steps = _steps(worker_activity_markdown(trajectory(messages), max_steps=10))

    assert steps[0] == "1. ran `echo 0`" and steps[-1] == "30. ran `echo 29`"
    assert steps[5] == "- … steps 6 to 25 (20) left out: see the transcript"
    assert len(steps) == 11


def test_no_tool_call_says_so():
    markdown = worker_activity_markdown(trajectory(mini_messages(("Nothing to do.", []))))

    assert markdown == "The Worker made no tool call.\n"


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


def test_a_real_miniagent_worker_run(server, tmp_path):
    """The MiniAgent's own process, against the offline model: what it records is read."""
    harness = shutil.copytree(HARNESS, tmp_path / "harness")
    work = tmp_path / "work"
    (work / "prompts").mkdir(parents=True)
    (work / "prompts/system.md").write_text("You are careful.\n")
    edit = {"command": "str_replace", "path": "prompts/system.md", "old_str": "You are careful."}
    script = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "ls prompts; exit 3"}}]},
        {"tool_calls": [{"name": "editor", "arguments": {"command": "view", "path": "prompts"}}]},
        {"tool_calls": [{"name": "editor", "arguments": {**edit, "new_str": "Be exact."}}]},
        {"tool_calls": [{"name": "editor", "arguments": {**edit, "new_str": "Be brief."}}]},
        {"text": "sharpened the prompt"},
    ]
    server.add_script("views-worker", script)
    llm = {"model": "simulator/script:views-worker", "base_url": server.url, "max_retries": 0}
    role = RoleConfig.model_validate({"type": "miniagent", "llm": llm})

    with worker_agent(role, harness) as agent:
        run = agent.run(work, "Improve the prompt.", task_id="worker-step-1")

    assert run.status == Status.SUCCESS, run.error
    assert _steps(worker_activity_markdown(run)) == [
        "1. ran `ls prompts; exit 3` — exit 3",
        "2. read `prompts`",
        "3. edited `prompts/system.md`",
        "4. edited `prompts/system.md` — failed",  # its old_str is gone by then
    ]
