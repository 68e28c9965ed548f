"""The Worker's instruction carries the reference proposer's rules (seed 000: the prompt's
generalisation rule; the reference's skill: no parameter tweaks, prototype, report)."""

from __future__ import annotations

from flashrsi_dagster.algorithms.meta_harness import markers
from flashrsi_dagster.algorithms.meta_harness.prompts import worker_instruction
from flashrsi_dagster.snapshots import Components


def _instruction() -> str:
    components = Components.parse({"prompt": ["prompts/*.md"]})
    return worker_instruction(components, ".history", "prompts/system.md")


def test_the_instruction_states_the_proposer_rules():
    text = " ".join(_instruction().split())
    assert "Change a mechanism, not a number" in text  # no mere parameter tweaks
    assert "never overfit the evaluation set" in text and "Do not hard-code answers" in text
    assert "Prototype before you commit" in text
    assert ".history/frontier.json" in text and "summary.json" in text


def test_the_instruction_asks_for_a_report_whose_lines_the_history_reads():
    lines = _instruction().splitlines()
    assert any(line.startswith(f"{markers.HYPOTHESIS} <") for line in lines)
    assert any(line.startswith(f"{markers.AXIS} <") for line in lines)
