"""What the policies read from an instruction: the real prompts' marker lines."""

from __future__ import annotations

from flashrsi_dagster.algorithms.modular_rsi.prompts import edit_instruction, repair_instruction
from flashrsi_dagster.offline_model.conversation import Conversation, Message
from flashrsi_dagster.offline_model.policies.modular_rsi.instruction import (
    read_instruction,
    shell_text,
)


def _conversation(*texts: str) -> Conversation:
    return Conversation(
        "simulator/modular-worker", messages=tuple(Message("user", t) for t in texts)
    )


def test_the_markers_of_the_real_instructions_are_read():
    edit = read_instruction(
        _conversation(edit_instruction("tool_use", ["runtime/agent.py", "tools/shell.py"], []))
    )
    assert (edit.phase, edit.module, edit.files, edit.references) == (
        "edit",
        "tool_use",
        ("runtime/agent.py", "tools/shell.py"),
        None,
    )
    repair = read_instruction(
        _conversation(repair_instruction(["CLAUDE.md"], ".branches", "- none", "(no runs)"))
    )
    assert (repair.phase, repair.module, repair.references) == (
        "repair",
        "integration",
        ".branches",
    )


def test_the_latest_instruction_wins_and_none_without_a_phase():
    first = edit_instruction("agent_loop", ["runtime/agent.py"], [])
    second = edit_instruction("context_management", ["runtime/agent.py"], [])
    assert read_instruction(_conversation(first, "thanks", second)).module == "context_management"
    assert read_instruction(_conversation("Fix the bug.")) is None
    assert read_instruction(_conversation("ModularRSI phase: dance")) is None


def test_paths_leading_outside_the_folder_are_dropped():
    text = (
        "ModularRSI phase: edit\nModule: prompt\nModule files: CLAUDE.md, /etc/passwd, ../x, ~/y\n"
    )
    assert read_instruction(_conversation(text)).files == ("CLAUDE.md",)


def test_shell_results_of_miniagent_and_of_a_plain_shell():
    assert shell_text("Exit code: 1\n--- a\n+++ b\n") == (1, "--- a\n+++ b\n")
    assert shell_text("Exit code: 0\n(no output)") == (0, "")
    assert shell_text("plain output\n") == (None, "plain output\n")
