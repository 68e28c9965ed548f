"""The review phase: verdicts by written rules, on the diffs the simulated Worker makes."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.modular_rsi.prompts import review_instruction
from flashrsi_dagster.algorithms.modular_rsi.protocol import read_verdict
from flashrsi_dagster.offline_model.conversation import Conversation, Message
from flashrsi_dagster.offline_model.policies.modular_rsi import modular_worker, reviewer
from tests.offline_model.policies.modular_rsi.conftest import drive
from tests.offline_model.policies.modular_rsi.test_edit import FIVE, _instruction
from tests.offline_model.workspace_tools import Workspace

TARGET = {"observation_management": "runtime/tool_result.py"}


def _diff(checkout: Path, *paths: str) -> str:
    chunks = []
    for path in paths:
        before = (HARNESS / path).read_text().splitlines(keepends=True)
        after = (checkout / path).read_text().splitlines(keepends=True)
        chunks += difflib.unified_diff(before, after, f"a/{path}", f"b/{path}")
    return "".join(chunks)


def _review(policy, module: str, files: list[str], diff: str):
    conversation = Conversation(
        "simulator/reviewer", messages=(Message("user", review_instruction(module, files, diff)),)
    )
    return read_verdict(policy(conversation).text)


@pytest.mark.parametrize(
    ("module", "verdict"),
    [
        ("context_management", "accept"),
        ("observation_management", "accept"),
        ("task_completion_detection", "accept"),
        ("agent_loop", "reject"),
        ("tool_use", "reject"),
    ],
)
def test_the_worker_s_edit_of_each_module_and_its_verdict(checkout, module, verdict):
    target = TARGET.get(module, "runtime/agent.py")
    drive(modular_worker, Workspace(checkout), _instruction(module, FIVE[module], target))
    diff = _diff(checkout, target)

    for policy in (reviewer, modular_worker):  # a separate reviewer, or the Worker's model
        assert _review(policy, module, FIVE[module], diff).verdict == verdict


def test_guidance_outside_a_module_that_decides_what_the_model_reads_is_rejected(checkout):
    drive(
        modular_worker,
        Workspace(checkout),
        _instruction("agent_loop", ["runtime/agent.py"], "runtime/agent.py"),
    )

    found = _review(
        reviewer, "agent_loop", ["runtime/agent.py"], _diff(checkout, "runtime/agent.py")
    )

    assert found.reason.startswith("it adds classification guidance for the model (params = ")
    assert "context or observation management's responsibility, not agent_loop's" in found.reason
    assert "(how the agent alternates model calls and actions until it stops)" in found.reason


def test_a_file_outside_the_module_is_rejected(checkout):
    (checkout / "tools/shell.py").write_text("# rewritten\n")
    found = _review(
        reviewer, "context_management", ["runtime/agent.py"], _diff(checkout, "tools/shell.py")
    )
    assert (
        found.verdict == "reject" and "tools/shell.py, outside the module's files" in found.reason
    )


def test_an_empty_diff_and_a_dropped_limit_are_rejected(checkout):
    assert _review(reviewer, "agent_loop", ["runtime/agent.py"], "").verdict == "reject"
    source = (checkout / "runtime/agent.py").read_text()
    (checkout / "runtime/agent.py").write_text(source.replace('params.get("max_turns", 50)', "50"))

    found = _review(
        reviewer, "agent_loop", ["runtime/agent.py"], _diff(checkout, "runtime/agent.py")
    )

    assert found.verdict == "reject" and "`max_turns` limit" in found.reason


def test_the_integration_may_merge_guidance(checkout):
    drive(
        modular_worker,
        Workspace(checkout),
        _instruction("context_management", ["runtime/agent.py"], "runtime/agent.py"),
    )
    files = ["runtime/agent.py", "tools/shell.py", "runtime/tool_result.py"]
    assert (
        _review(reviewer, "integration", files, _diff(checkout, "runtime/agent.py")).verdict
        == "accept"
    )


def test_the_reviewer_answers_only_reviews():
    conversation = Conversation("simulator/reviewer", messages=(Message("user", "Fix the bug."),))
    assert "nothing this simulated model can do" in reviewer(conversation).text
