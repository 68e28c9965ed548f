"""`simulator/worker`: reads its history through real tool calls and improves the prompt."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from flashrsi_dagster.algorithms.meta_harness.prompts import worker_instruction
from flashrsi_dagster.offline_model.conversation import Conversation, Message
from flashrsi_dagster.offline_model.policies.prompt_edits import Edit
from flashrsi_dagster.offline_model.policies.rules import Rule
from flashrsi_dagster.offline_model.policies.worker import file_lines, improve, patch_text
from flashrsi_dagster.records import Status, Trajectory
from flashrsi_dagster.snapshots import Components
from tests.offline_model.workspace_tools import EDITOR_TOOL, SHELL_TOOL, Workspace

PROMPT = (
    "You are a careful classifier.\n- ham when the text mentions: meeting\nDefault label: ham\n"
)
TASK = "Improve the classifier.\nHistory: .history\nPrompt file: prompts/system.md\n"


def _trajectory(task_id: str, text: str, expected: str, answer: str) -> str:
    success = answer == expected
    return Trajectory(
        task_id=task_id,
        split="dev",
        snapshot_id="a" * 40,
        status=Status.SUCCESS if success else Status.FAILURE,
        answer=answer,
        score=1.0 if success else 0.0,
        messages=[
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": f"Labels: spam, ham\nText: {text}"},
            {"role": "assistant", "content": answer},
        ],
        metadata={"expected": expected},
    ).model_dump_json()


def _workspace(root: Path, records: dict[str, str]) -> Workspace:
    (root / ".history").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "prompts/system.md").write_text(PROMPT)
    for name, record in records.items():
        (root / ".history" / name).write_text(record)
    return Workspace(root)


HISTORY = {
    "t1.json": _trajectory("t1", "You won the lottery! Claim your prize now", "spam", "ham"),
    "t2.json": _trajectory("t2", "Lottery results are in: send your bank details", "spam", "ham"),
    "t3.json": _trajectory("t3", "The meeting moved to Tuesday", "ham", "ham"),
}


def _drive(
    client: openai.OpenAI, workspace: Workspace, task: str = TASK, model: str = "simulator/worker"
) -> str:
    """Run the worker conversation to its final text, executing its tool calls for real."""
    messages: list[dict] = [
        {"role": "system", "content": "You improve harnesses."},
        {"role": "user", "content": task},
    ]
    for _ in range(10):
        message = (
            client.chat.completions.create(
                model=model, messages=messages, tools=[SHELL_TOOL, EDITOR_TOOL]
            )
            .choices[0]
            .message
        )
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            output = workspace.run(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    raise AssertionError("the worker did not finish in 10 turns")


def _classify(client: openai.OpenAI, system: str, text: str) -> str:
    return (
        client.chat.completions.create(
            model="simulator/target",
            messages=[
                {"role": "system", "content": system},
                {"role": "user", "content": f"Labels: spam, ham\nText: {text}"},
            ],
        )
        .choices[0]
        .message.content
    )


def test_the_worker_learns_a_spam_rule_from_failures_and_the_target_follows_it(client, tmp_path):
    workspace = _workspace(tmp_path, HISTORY)

    final = _drive(client, workspace)

    improved = (tmp_path / "prompts/system.md").read_text()
    assert improved == PROMPT + "- spam when the text mentions: lottery, bank, claim\n"
    assert workspace.commands == [
        "find .history -type f -name '*.json' | sort",
        "cat .history/t1.json",
        "cat .history/t2.json",
        "cat .history/t3.json",
    ]
    assert workspace.paths == ["prompts/system.md", "prompts/system.md"]
    assert "added a `spam` rule for lottery, bank, claim" in final
    fresh = "Last chance to join the lottery"
    assert _classify(client, PROMPT, fresh) == "ham"
    assert _classify(client, improved, fresh) == "spam"


def test_it_follows_the_paths_the_meta_harness_worker_instruction_names(client, tmp_path):
    workspace = _workspace(tmp_path, HISTORY)
    (tmp_path / ".history").rename(tmp_path / "seen")
    (tmp_path / "prompts/system.md").rename(tmp_path / "prompts/main.md")
    components = Components.parse({"prompt": ["prompts/*.md"]})

    final = _drive(client, workspace, worker_instruction(components, "seen", "prompts/main.md"))

    assert workspace.commands[0] == "find seen -type f -name '*.json' | sort"
    assert "spam when the text mentions: lottery" in (tmp_path / "prompts/main.md").read_text()
    # The instruction asks for a report; its marker lines end the final message.
    hypothesis, axis = final.splitlines()[-2:]
    assert hypothesis.startswith("Hypothesis: ")
    assert axis == "Axis of change: prompt (keyword rules)"


def test_an_existing_rule_is_extended_in_place(client, tmp_path):
    history = {"t1.json": _trajectory("t1", "Quarterly budget review", "ham", "spam")}
    workspace = _workspace(tmp_path, history)

    final = _drive(client, workspace)

    assert (tmp_path / "prompts/system.md").read_text() == PROMPT.replace(
        "mentions: meeting", "mentions: meeting, budget, quarterly, review"
    )
    assert "extended the `ham` rule with budget, quarterly, review" in final


def test_without_failures_there_is_nothing_to_improve_and_nothing_is_edited(client, tmp_path):
    workspace = _workspace(tmp_path, {"t3.json": HISTORY["t3.json"]})

    final = _drive(client, workspace)

    assert "nothing to improve" in final
    assert workspace.paths == []
    assert (tmp_path / "prompts/system.md").read_text() == PROMPT


def test_a_missing_prompt_file_is_created(client, tmp_path):
    workspace = _workspace(tmp_path, HISTORY)

    _drive(client, workspace, TASK.replace("prompts/system.md", "prompts/new.md"))

    created = (tmp_path / "prompts/new.md").read_text()
    assert created == "- spam when the text mentions: lottery, bank, claim\n"


@pytest.mark.parametrize("line", ["History: /etc", "History: ../elsewhere", "Prompt file: /x.md"])
def test_paths_outside_the_working_directory_are_refused(client, tmp_path, line):
    workspace = _workspace(tmp_path, HISTORY)

    final = _drive(client, workspace, f"Improve.\n{line}\n")

    assert "refusing" in final
    assert workspace.commands == workspace.paths == []


def test_the_same_conversation_gets_the_same_reply():
    conversation = Conversation(model="simulator/worker", messages=(Message("user", TASK),))

    assert improve(conversation) == improve(conversation)
    assert improve(conversation).tool_calls[0].arguments == {
        "command": "find .history -type f -name '*.json' | sort"
    }


def test_editor_view_output_is_read_numbered_raw_missing_or_empty():
    assert file_lines("     1\tfirst\n     2\t\n     3\tthird") == ["first", "", "third"]
    assert file_lines("Here's the file:\n     1\tonly") == ["only"]
    assert file_lines("plain\ncontent") == ["plain", "content"]
    assert file_lines("Error: prompts/system.md does not exist") is None
    assert file_lines("prompts/system.md is empty") == []


def test_with_codex_tools_the_edits_are_one_patch_in_file_order():
    spam = Rule("spam", ("prize",), "- spam when the text mentions: prize")
    ham = Rule("ham", ("meeting",), "- ham when the text mentions: meeting")
    lines = [spam.line, "Be brief.", ham.line]
    edits = [
        Edit("eggs", ("omelette",), None),
        Edit("ham", ("agenda",), ham),  # alphabetical before spam, later in the file
        Edit("spam", ("lottery",), spam),
    ]

    assert patch_text(edits, lines, "AGENTS.md").splitlines() == [
        "*** Begin Patch",
        "*** Update File: AGENTS.md",
        "@@",
        f"-{spam.line}",
        "+- spam when the text mentions: prize, lottery",
        "@@",
        f"-{ham.line}",
        "+- ham when the text mentions: meeting, agenda",
        "@@",
        " - ham when the text mentions: meeting, agenda",  # the last line, as already edited
        "+- eggs when the text mentions: omelette",
        "*** End of File",
        "*** End Patch",
    ]
    assert patch_text(edits[:1], None, "AGENTS.md").splitlines()[1:3] == [
        "*** Add File: AGENTS.md",
        "+- eggs when the text mentions: omelette",
    ]


def test_a_batched_read_is_split_back_into_its_files():
    from flashrsi_dagster.offline_model.policies.worker import batch_command, split_batch

    output = '==> a.json <==\n{"x": 1}\n\n==> dir/b.json <==\n{"y": 2}\n'
    assert split_batch(output) == {"a.json": '\n{"x": 1}\n\n', "dir/b.json": '\n{"y": 2}\n'}
    assert batch_command(["a.json", "it's.json"]) == "tail -n +1 -- a.json 'it'\"'\"'s.json'"
