"""The five mechanisms a ModularRSI module may evolve each have a named place in the files the
five-module example names: a function whose docstring opens with the mechanism's name. The
files are parsed, never imported."""

from __future__ import annotations

import ast

import pytest

from tests.agents.miniagent.conftest import HARNESS

FIVE_MODULES = {
    "agent_loop": ["runtime/agent.py"],
    "tool_use": ["runtime/agent.py", "tools/shell.py"],
    "observation_management": ["runtime/agent.py", "runtime/tool_result.py"],
    "context_management": ["runtime/agent.py"],
    "task_completion_detection": ["runtime/agent.py"],
}
PLACES = {
    "agent_loop": {"runtime/agent.py": ["run", "_turn"]},
    "tool_use": {"runtime/agent.py": ["use_tool"], "tools/shell.py": ["_run"]},
    "observation_management": {"runtime/tool_result.py": ["observation", "error_text", "bound"]},
    "context_management": {"runtime/agent.py": ["build_context"]},
    "task_completion_detection": {"runtime/agent.py": ["final_answer"]},
}


def _places(path: str) -> dict[str, list[str]]:
    """Function name -> the mechanism its docstring opens with ("Agent loop: ..." -> agent_loop)."""
    tree = ast.parse((HARNESS / path).read_text(), path)
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (doc := ast.get_docstring(node)):
            head = doc.split(":", 1)[0].strip().lower().replace(" ", "_")
            found.setdefault(head, []).append(node.name)
    return found


@pytest.mark.parametrize("module", sorted(PLACES))
def test_each_mechanism_has_its_named_place_in_the_module_s_files(module):
    for path, functions in PLACES[module].items():
        assert path in FIVE_MODULES[module]
        assert _places(path).get(module) == functions


def test_runtime_agent_py_is_shared_by_all_five_modules():
    assert all("runtime/agent.py" in files for files in FIVE_MODULES.values())
    assert set(_places("runtime/agent.py")) >= {
        "agent_loop",
        "tool_use",
        "context_management",
        "task_completion_detection",
    }


def test_every_file_the_example_names_exists_and_compiles():
    for path in {p for files in FIVE_MODULES.values() for p in files}:
        compile((HARNESS / path).read_text(), path, "exec")
