"""The edit phase: the real edit instruction in, the module's place edited in a checkout."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.modular_rsi.findings import rank_targets
from flashrsi_dagster.algorithms.modular_rsi.prompts import edit_instruction
from flashrsi_dagster.algorithms.modular_rsi.protocol import Finding
from flashrsi_dagster.offline_model.policies.modular_rsi import modular_worker
from tests.offline_model.policies.modular_rsi.conftest import drive
from tests.offline_model.workspace_tools import Workspace

RULE = "- malicious when the text mentions: ignore, previous"
FIVE = {
    "agent_loop": ["runtime/agent.py"],
    "tool_use": ["runtime/agent.py", "tools/shell.py"],
    "observation_management": ["runtime/agent.py", "runtime/tool_result.py"],
    "context_management": ["runtime/agent.py"],
    "task_completion_detection": ["runtime/agent.py"],
}


def _instruction(module: str, files: list[str], target: str, rule: str = RULE) -> str:
    finding = Finding(
        file=target,
        tasks=("t1", "t2"),
        reason="two failing samples",
        change=f"make the model see this guidance: `{rule}`",
    )
    return edit_instruction(module, files, rank_targets([finding], 3))


def _diff(checkout: Path, path: str) -> list[str]:
    out = subprocess.run(
        ["diff", "-u", str(HARNESS / path), str(checkout / path)], capture_output=True, text=True
    ).stdout
    return [line for line in out.splitlines()[2:] if line[:1] in "+-"]


@pytest.mark.parametrize(
    ("module", "target", "added"),
    [
        ("context_management", "runtime/agent.py", [f'    system += "\\n{RULE}"']),
        ("observation_management", "runtime/tool_result.py", [f'    output += "\\n{RULE}"']),
        ("tool_use", "runtime/agent.py", [f'    output += "\\n{RULE}"']),
        (
            "agent_loop",
            "runtime/agent.py",
            [f'    params = {{**params, "instruction": params["instruction"] + "\\n{RULE}"}}'],
        ),
    ],
)
def test_guidance_goes_where_the_module_s_place_lets_the_model_see_it(
    checkout, module, target, added
):
    text, turns = drive(
        modular_worker, Workspace(checkout), _instruction(module, FIVE[module], target)
    )

    assert [c.arguments["command"] for c in turns[0]] == ["view"]
    assert [c.arguments["command"] for c in turns[1]] == ["str_replace"]
    assert _diff(checkout, target) == ["+" + line for line in added]
    compile((checkout / target).read_text(), target, "exec")
    assert text.startswith(f"Simulator worker, {module}: changed.")


def test_the_context_place_is_the_one_edited(checkout):
    drive(
        modular_worker,
        Workspace(checkout),
        _instruction("context_management", FIVE["context_management"], "runtime/agent.py"),
    )

    source = (checkout / "runtime/agent.py").read_text()
    place = source[source.index("def build_context") : source.index("def use_tool")]
    assert RULE in place and source.count(RULE) == 1


def test_a_second_edit_adds_only_new_keywords_and_none_when_all_are_known(checkout):
    workspace = Workspace(checkout)
    drive(
        modular_worker,
        workspace,
        _instruction("context_management", ["runtime/agent.py"], "runtime/agent.py"),
    )
    again = "- malicious when the text mentions: ignore, reveal"
    drive(
        modular_worker,
        workspace,
        _instruction("context_management", ["runtime/agent.py"], "runtime/agent.py", again),
    )
    text, turns = drive(
        modular_worker,
        workspace,
        _instruction("context_management", ["runtime/agent.py"], "runtime/agent.py", again),
    )

    source = (checkout / "runtime/agent.py").read_text()
    assert "- malicious when the text mentions: reveal" in source
    assert len(turns) == 1  # viewed, and nothing left to add
    assert "already names every keyword" in text


def test_task_completion_makes_the_answer_a_bare_label_once(checkout):
    instruction = _instruction(
        "task_completion_detection", ["runtime/agent.py"], "runtime/agent.py"
    )
    drive(modular_worker, Workspace(checkout), instruction)
    text, _ = drive(modular_worker, Workspace(checkout), instruction)

    source = (checkout / "runtime/agent.py").read_text()
    place = source[source.index("def final_answer") :]
    assert "splitlines()[0]" in place and RULE not in source
    assert "already makes the final answer a bare label" in text
    namespace: dict = {}
    exec(compile(place[: place.index("def _fail")], "final_answer", "exec"), namespace)
    reply = type("Reply", (), {"tool_calls": [], "text": "Label: Malicious.\nbecause"})
    assert namespace["final_answer"](reply) == "Malicious"


def test_a_target_outside_the_module_s_files_is_ignored(checkout):
    text, turns = drive(
        modular_worker,
        Workspace(checkout),
        _instruction("agent_loop", ["runtime/agent.py"], "tools/shell.py"),
    )
    assert turns == [] and "names no target" in text


def test_markdown_gets_rule_lines_and_json_hooks_are_left_alone(tmp_path):
    (tmp_path / "hooks").mkdir()
    (tmp_path / "CLAUDE.md").write_text("# Project\n- malicious when the text mentions: ignore\n")
    (tmp_path / "hooks/hooks.json").write_text(json.dumps({"hooks": {}}))

    drive(modular_worker, Workspace(tmp_path), _instruction("prompt", ["CLAUDE.md"], "CLAUDE.md"))
    text, turns = drive(
        modular_worker,
        Workspace(tmp_path),
        _instruction("hook", ["hooks/hooks.json"], "hooks/hooks.json"),
    )

    assert (tmp_path / "CLAUDE.md").read_text() == (
        "# Project\n- malicious when the text mentions: ignore, previous\n"
    )
    assert json.loads((tmp_path / "hooks/hooks.json").read_text()) == {"hooks": {}}
    assert len(turns) == 1 and "left alone" in text
