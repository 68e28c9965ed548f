"""Messages of either shape read as entries, each tool result attached to its call."""

from __future__ import annotations

from flashrsi_dagster.views.messages import read_entries, tool_calls
from tests.views.conftest import mini_call, mini_messages


def test_miniagent_messages_attach_each_tool_message_to_its_call():
    view = mini_call("c1", "editor", command="view", path="prompts/system.md")
    bad = mini_call("c2", "editor", command="create", path="../escape")
    messages = mini_messages(
        ("Looking first.", [(view, "1\tYou are careful."), (bad, "Error: '../escape' is outside")]),
        ("Done.", []),
    )

    entries = read_entries(messages)

    assert [e.role for e in entries] == ["run_config", "system", "user", "assistant", "assistant"]
    assert entries[0].text == (
        "agent role: worker · adapter: miniagent · model: simulator/worker · snapshot: abababababab"
    )
    first, second = entries[3].calls
    assert (first.name, first.arguments, first.result, first.failed) == (
        "editor",
        {"command": "view", "path": "prompts/system.md"},
        "1\tYou are careful.",
        False,
    )
    assert second.failed  # MiniAgent's tools report a failure as "Error: ..."
    assert entries[3].text == "Looking first." and entries[4].text == "Done."


def test_claude_code_blocks_of_one_message_join_and_results_find_their_calls(claude_messages):
    entries = read_entries(claude_messages)

    assert [e.role for e in entries] == [
        "run_config", "user", "event", *["assistant"] * 6, "result"
    ]  # fmt: skip
    assert entries[2].text == "init"  # the event's data (tool list, session) is left out
    looked = entries[3]
    assert looked.text == "Let me look at the prompt."
    assert [(c.name, c.result) for c in looked.calls] == [
        ("Read", "1\tYou are a careful classifier."),
        ("Bash", "round-000"),  # a result's text blocks read as text
    ]
    grep, glob = entries[6].calls
    assert grep.failed and not glob.failed
    assert entries[-1].text == "outcome: success · turns: 6 · stop reason: end_turn"


def test_a_cut_off_record_keeps_calls_without_results_and_results_without_calls():
    messages = [
        {"role": "tool", "tool_call_id": "gone", "content": "output of a call cut off"},
        {"role": "assistant", "content": None, "tool_calls": [mini_call("c9", "shell")]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c8", "function": {"name": "shell", "arguments": "{not json"}}],
        },
    ]

    entries = read_entries(messages)

    assert (entries[0].role, entries[0].text) == ("tool", "output of a call cut off")
    calls = tool_calls(messages)
    assert [(c.name, c.result) for c in calls] == [("shell", None), ("shell", None)]
    assert calls[1].arguments == {"arguments": "{not json"}  # kept, not dropped
