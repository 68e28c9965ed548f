"""MiniAgent as ModularRSI's Worker, for real: the entry subprocess, the OpenAI SDK, its shell
and editor tools, and `simulator/modular-worker` on a localhost `OfflineModelServer`. It edits
a module's place in the shared `runtime/agent.py` and merges two branches that both changed
that file. Candidate code is compiled, never imported."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from flashrsi_dagster.agents import worker_agent
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.algorithms.modular_rsi.findings import rank_targets
from flashrsi_dagster.algorithms.modular_rsi.prompts import (
    edit_instruction,
    integration_instruction,
    review_instruction,
)
from flashrsi_dagster.algorithms.modular_rsi.protocol import Finding, read_verdict
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status

RULE = "- malicious when the text mentions: ignore, previous"
AGENT_PY = "runtime/agent.py"
ALL_FILES = ["runtime/agent.py", "tools/shell.py", "runtime/tool_result.py"]


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig()) as running:
        yield running


@pytest.fixture
def worker(server):
    role = RoleConfig.model_validate(
        {
            "type": "miniagent",
            "llm": {
                "model": "simulator/modular-worker",
                "base_url": server.url,
                "max_retries": 0,
                "timeout": 30,
            },
            "timeout": 120,
            "max_turns": 10,
        }
    )
    with worker_agent(role, HARNESS) as agent:
        yield agent


def _checkout(folder: Path) -> Path:
    shutil.copytree(HARNESS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _edit(worker, checkout: Path, module: str) -> str:
    finding = Finding(
        file=AGENT_PY,
        tasks=("t1",),
        reason="failing samples",
        change=f"make the model see: `{RULE}`",
    )
    instruction = edit_instruction(module, [AGENT_PY], rank_targets([finding], 1))
    trajectory = worker.run(checkout, instruction, task_id=f"edit-{module}")
    assert trajectory.status == Status.SUCCESS, trajectory.error
    return trajectory.answer


def _place(source: str, name: str, following: str) -> str:
    return source[source.index(f"def {name}") : source.index(f"def {following}")]


def test_the_worker_edits_the_context_place_of_the_shared_file(worker, tmp_path):
    checkout = _checkout(tmp_path / "checkout")

    answer = _edit(worker, checkout, "context_management")

    source = (checkout / AGENT_PY).read_text()
    compile(source, AGENT_PY, "exec")
    assert RULE in _place(source, "build_context", "use_tool") and source.count(RULE) == 1
    seed = (HARNESS / AGENT_PY).read_text()
    assert source.replace(f'    system += "\\n{RULE}"\n', "") == seed
    assert answer.startswith("Simulator worker, context_management: changed.")


def test_the_worker_merges_two_branches_that_changed_the_shared_file(worker, tmp_path):
    seed = _checkout(tmp_path / "seed")
    for module in ("context_management", "task_completion_detection"):
        _edit(worker, _checkout(seed / ".branches" / module), module)
    branches = [("context_management", "1 file"), ("task_completion_detection", "1 file")]

    trajectory = worker.run(
        seed, integration_instruction(ALL_FILES, ".branches", branches), task_id="integration"
    )

    assert trajectory.status == Status.SUCCESS, trajectory.error
    merged = (seed / AGENT_PY).read_text()
    compile(merged, AGENT_PY, "exec")
    assert RULE in _place(merged, "build_context", "use_tool")
    assert "splitlines()[0]" in _place(merged, "final_answer", "_fail")
    for module in ("context_management", "task_completion_detection"):  # each branch's change
        branch = (seed / ".branches" / module / AGENT_PY).read_text()
        assert set(branch.splitlines()) <= set(merged.splitlines())
    assert "merged 1 file(s) into the seed" in trajectory.answer


def test_the_worker_reviews_the_diff_it_is_shown(worker, tmp_path):
    checkout = _checkout(tmp_path / "checkout")
    _edit(worker, checkout, "agent_loop")
    diff = "".join(
        difflib.unified_diff(
            (HARNESS / AGENT_PY).read_text().splitlines(keepends=True),
            (checkout / AGENT_PY).read_text().splitlines(keepends=True),
            f"a/{AGENT_PY}",
            f"b/{AGENT_PY}",
        )
    )

    trajectory = worker.run(
        tmp_path, review_instruction("agent_loop", [AGENT_PY], diff), task_id="review"
    )

    verdict = read_verdict(trajectory.answer)
    assert verdict.verdict == "reject" and "not agent_loop's" in verdict.reason
