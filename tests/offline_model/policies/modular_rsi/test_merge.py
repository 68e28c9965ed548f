"""Integration and repair: the branches' changes merged into the seed by text."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.modular_rsi.prompts import (
    integration_instruction,
    repair_instruction,
)
from flashrsi_dagster.offline_model.policies.modular_rsi import merge, modular_worker
from tests.offline_model.policies.modular_rsi.conftest import drive
from tests.offline_model.policies.modular_rsi.test_edit import FIVE, _instruction
from tests.offline_model.workspace_tools import Workspace

ALL_FILES = ["runtime/agent.py", "tools/shell.py", "runtime/tool_result.py"]
SEED = "".join(f"line {n}\n" for n in range(1, 21))


def _diff(seed: str, branch: str, tmp_path: Path) -> str:
    (tmp_path / "a").write_text(seed)
    (tmp_path / "b").write_text(branch)
    return subprocess.run(
        ["diff", "-u", "a", "b"], cwd=tmp_path, capture_output=True, text=True
    ).stdout


def test_changes_of_two_branches_in_different_places_both_apply(tmp_path):
    one = SEED.replace("line 3\n", "line 3 (one)\n")
    two = SEED.replace("line 6\n", "line 6\nadded by two\n")  # context overlaps one's hunk
    merged = merge.merge(
        SEED, {"one": _diff(SEED, one, tmp_path), "two": _diff(SEED, two, tmp_path)}
    )
    assert merged.text == SEED.replace("line 3\n", "line 3 (one)\n").replace(
        "line 6\n", "line 6\nadded by two\n"
    )
    assert merged.branches == ["one", "two"] and merged.conflicts == []


def test_the_same_change_applies_once_and_insertions_at_one_point_keep_branch_order(tmp_path):
    same = SEED.replace("line 9\n", "line nine\n")
    first = SEED.replace("line 1\n", "line 1\nfirst\n")
    second = SEED.replace("line 1\n", "line 1\nsecond\n")
    diffs = {
        b: _diff(SEED, t, tmp_path)
        for b, t in [("a", same), ("b", same), ("c", first), ("d", second)]
    }

    merged = merge.merge(SEED, diffs)

    assert merged.text == same.replace("line 1\n", "line 1\nfirst\nsecond\n")
    assert merged.conflicts == []


def test_a_conflict_keeps_the_first_branch_s_change_and_is_reported(tmp_path):
    one, two = SEED.replace("line 4\n", "four\n"), SEED.replace("line 4\n", "FOUR\n")
    merged = merge.merge(
        SEED, {"one": _diff(SEED, one, tmp_path), "two": _diff(SEED, two, tmp_path)}
    )
    assert merged.text == one
    assert merged.conflicts == ["two and one both changed seed lines 4-4; one's change kept"]


def _branches(seed: Path, modules: dict[str, str]) -> Path:
    """`.branches/<module>/` in the seed's checkout, each made by the simulated Worker."""
    for module, target in modules.items():
        branch = seed / ".branches" / module
        shutil.copytree(HARNESS, branch, ignore=shutil.ignore_patterns("__pycache__"))
        drive(modular_worker, Workspace(branch), _instruction(module, FIVE[module], target))
    return seed / ".branches"


def test_integration_merges_two_branches_that_changed_the_shared_file(checkout):
    _branches(
        checkout,
        {
            "context_management": "runtime/agent.py",
            "observation_management": "runtime/tool_result.py",
            "task_completion_detection": "runtime/agent.py",
        },
    )
    listed = [
        ("context_management", "1 file"),
        ("observation_management", "1 file"),
        ("task_completion_detection", "1 file"),
    ]
    workspace = Workspace(checkout)

    text, turns = drive(
        modular_worker, workspace, integration_instruction(ALL_FILES, ".branches", listed)
    )

    assert (
        "diff -u runtime/agent.py .branches/context_management/runtime/agent.py"
        in workspace.commands
    )
    assert [c.arguments["command"] for c in turns[-1]] == ["create", "create"]
    source = (checkout / "runtime/agent.py").read_text()
    compile(source, "runtime/agent.py", "exec")
    context = source[source.index("def build_context") : source.index("def use_tool")]
    completion = source[source.index("def final_answer") : source.index("def _fail")]
    assert '"\\n- malicious when the text mentions: ignore, previous"' in context
    assert "splitlines()[0]" in completion
    assert "- malicious when" in (checkout / "runtime/tool_result.py").read_text()
    assert (checkout / "tools/shell.py").read_text() == (HARNESS / "tools/shell.py").read_text()
    assert text.startswith("Simulator worker, integration of context_management, ")
    assert "merged 2 file(s) into the seed" in text and "conflict" not in text


def test_integration_with_unchanged_branches_changes_nothing(checkout):
    refs = checkout / ".branches" / "agent_loop"
    shutil.copytree(HARNESS, refs, ignore=shutil.ignore_patterns("__pycache__"))
    text, turns = drive(
        modular_worker,
        Workspace(checkout),
        integration_instruction(ALL_FILES, ".branches", [("agent_loop", "")]),
    )
    assert len(turns) == 2 and "nothing to merge" in text


def test_repair_with_nothing_broken_says_so(checkout):
    _branches(checkout, {"context_management": "runtime/agent.py"})
    instruction = repair_instruction(
        ALL_FILES, ".branches", "- task t1: answered benign, expected malicious", "(no runs)"
    )

    text, turns = drive(modular_worker, Workspace(checkout), instruction)

    assert len(turns) == 1 and "nothing the merge broke is left to repair" in text


def test_repair_restores_a_file_that_no_longer_compiles_from_a_branch(checkout):
    _branches(checkout, {"context_management": "runtime/agent.py"})
    (checkout / "runtime/agent.py").write_text("def broken(:\n")
    instruction = repair_instruction(
        ALL_FILES, ".branches", "- every task: SyntaxError in runtime/agent.py", "(no runs)"
    )

    text, _ = drive(modular_worker, Workspace(checkout), instruction)

    restored = (checkout / "runtime/agent.py").read_text()
    assert restored == (checkout / ".branches/context_management/runtime/agent.py").read_text()
    assert "replaced by context_management's version" in text
