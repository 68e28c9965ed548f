"""A trajectory as a transcript: header, messages, tool calls with arguments and results."""

from __future__ import annotations

import re

from flashrsi_dagster.records import ErrorInfo, Status, Usage
from flashrsi_dagster.views import trajectory_markdown
from tests.views.conftest import mini_call, mini_messages, trajectory

SHELL = mini_call("c1", "shell", command="ls history")
CREATE = mini_call("c2", "editor", command="create", path="notes.md", file_text="one\ntwo\n")


def test_the_header_says_how_it_ended_and_what_it_cost():
    try:
        raise TimeoutError("no answer within 600 s")
    except TimeoutError as exc:
        error = ErrorInfo.from_exception(exc)
    usage = Usage(input_tokens=12345, output_tokens=678, cost=0.0123456, turns=7, tool_calls=9)
    rollout = trajectory(
        mini_messages(), status=Status.TIMEOUT, score=None, usage=usage, duration=75, error=error
    )

    header = trajectory_markdown(rollout).split("\n\n**#1")[0]

    assert header.startswith("**Task** `t1` (dev split, attempt 0) on snapshot `cccccccccccc`\n")
    assert (
        "**Status** timeout · **score** - · **turns** 7 · **tool calls** 9 · "
        "**tokens** 12,345 in / 678 out · **cost** $0.0123 · **duration** 1 min 15 s"
    ) in header
    assert "**Error** `TimeoutError`\n```\nno answer within 600 s\n```" in header
    assert 'raise TimeoutError("no answer within 600 s")' in header  # the traceback's end
    assert "**cost**" not in trajectory_markdown(trajectory(mini_messages()))  # unpriced


def test_each_message_and_tool_call_in_order_with_arguments_and_results():
    messages = mini_messages(
        ("Let me look.", [(SHELL, "Exit code: 0\nround-000"), (CREATE, "Created notes.md")]),
        ("All done.", []),
    )

    markdown = trajectory_markdown(trajectory(messages))

    order = [
        "**#1 run_config**",
        "**#2 system**\n```\nYou are MiniAgent.\n```",
        "**#3 user**\n```\nImprove the harness.\n```",
        "**#4 assistant**\n```\nLet me look.\n```",
        "→ tool call `shell` (`c1`)\n```\ncommand: ls history\n```\n← result\n"
        "```\nExit code: 0\nround-000\n```",
        "→ tool call `editor` (`c2`)\n```\ncommand: create\npath: notes.md\nfile_text: |\n"
        "  one\n  two\n```\n← result\n```\nCreated notes.md\n```",
        "**#5 assistant**\n```\nAll done.\n```",
    ]
    positions = [markdown.index(part) for part in order]
    assert positions == sorted(positions)


def test_a_long_message_is_cut_evenly_and_a_fence_in_it_stays_inside():
    long = "START " + "x" * 5_000 + " END\n```\n# not a heading"
    messages = mini_messages((long, [(SHELL, "Error: " + "y" * 5_000)]))

    markdown = trajectory_markdown(trajectory(messages), max_chars=16_000)

    assert "START" in markdown and "# not a heading" in markdown
    assert "characters cut …]" in markdown
    assert "\n````\nSTART" in markdown  # a longer fence than the message's own
    assert "← result (error)" in markdown


def test_a_long_run_keeps_its_start_and_end_and_says_which_turns_were_left_out():
    turns = [
        (f"step {n}", [(mini_call(f"c{n}", "shell", command=f"echo {n}"), "z" * 900)])
        for n in range(60)
    ]
    messages = mini_messages(*turns, ("final answer", []))

    markdown = trajectory_markdown(trajectory(messages), max_chars=10_000, source="round-001.json")

    assert len(markdown) <= 10_000
    assert "Improve the harness." in markdown and "final answer" in markdown
    assert "step 59" in markdown and "step 30" not in markdown
    note = re.search(r"\*\*… entries #(\d+) to #(\d+) \((\d+) of 64\) left out\*\*.*", markdown)
    first, last, count = (int(n) for n in note.groups())
    assert count == last - first + 1
    assert note[0].endswith("under 10,000 characters; the whole trajectory: `round-001.json`.")
    assert f"**#{first - 1} " in markdown and f"**#{last + 1} " in markdown
    assert f"**#{first} " not in markdown and f"**#{last} " not in markdown


def test_a_claude_code_session_reads_the_same_way(claude_messages):
    markdown = trajectory_markdown(trajectory(claude_messages))

    assert "**#4 assistant**\n```\nLet me look at the prompt.\n```\n→ tool call `Read`" in markdown
    assert (
        "→ tool call `Grep` (`u5`)\n```\npattern: TODO\npath: prompts\n```\n← result (error)"
        in (markdown)
    )
    assert "**#3 event**\n```\ninit\n```" in markdown
    assert markdown.rstrip().endswith("outcome: success · turns: 6 · stop reason: end_turn\n```")


def test_no_messages_says_so():
    assert trajectory_markdown(trajectory([])).endswith("No messages were recorded.\n")
