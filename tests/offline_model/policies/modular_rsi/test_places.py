"""Finding a module's place in a Python file, by parsing it (never importing it)."""

from __future__ import annotations

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.offline_model.policies.modular_rsi.places import (
    find_places,
    known_keywords,
    python_edit,
)
from flashrsi_dagster.offline_model.policies.rules import parse_rule


def _lines(path: str) -> list[str]:
    return (HARNESS / path).read_text().splitlines()


def test_the_places_of_the_shared_runtime_file():
    lines = _lines("runtime/agent.py")
    assert [p.name for p in find_places(lines, "agent_loop")] == ["run", "_turn"]
    assert [p.name for p in find_places(lines, "context_management")] == ["build_context"]
    assert [p.name for p in find_places(lines, "task_completion_detection")] == ["final_answer"]
    assert find_places(lines, "observation_management") == []
    assert [p.name for p in find_places(_lines("tools/shell.py"), "tool_use")] == ["_run"]


def test_a_file_that_does_not_parse_has_no_place():
    assert find_places(["def broken(:"], "agent_loop") == []
    assert "has no place for agent_loop" in python_edit(["def broken(:"], "agent_loop", [])


def test_rules_written_as_string_literals_count_as_known():
    source = 'system += "\\n- malicious when the text mentions: ignore, previous"\n'
    assert known_keywords(source) == {"malicious": {"ignore", "previous"}}
    rule = parse_rule("- malicious when the text mentions: ignore, previous")
    assert "already names every keyword" in python_edit(
        [*_lines("runtime/agent.py"), source], "context_management", [rule]
    )
