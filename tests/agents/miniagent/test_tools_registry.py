"""The tool registry and the harness's independence from the framework."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import HARNESS


def test_every_tool_is_built_with_its_function_schema(harness):
    tools = harness.tools.build_tools(list(harness.tools.TOOLS))

    for name, tool in tools.items():
        assert tool.name == tool.schema["name"] == name
        parameters = tool.schema["parameters"]
        assert parameters["type"] == "object"
        assert set(parameters["required"]) <= set(parameters["properties"])
        assert tool.schema["description"]


def test_an_unknown_tool_is_refused_by_name(harness):
    with pytest.raises(ValueError, match=r"unknown tool.*'browser'"):
        harness.tools.build_tools(["shell", "browser"])


def test_the_harness_imports_nothing_from_the_framework():
    script = (
        f"import sys; sys.path.insert(0, {str(HARNESS)!r})\n"
        "import runtime.workspace, tools.shell, tools.editor, tools.read_skill\n"
        "print(sorted(m for m in sys.modules if m.startswith('flashrsi')))\n"
    )

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
