"""SWE-bench rollouts end to end on the tiny set: MiniAgent (driven by a scripted model on the
offline simulator) works in a checkout at the base commit, jailed; its changes are evaluated
and graded by `swebench`'s own grading."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.benchmarks.swe_bench import SWEBench
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.records import Status
from tests.conftest import needs_jails

TINY = Path(__file__).parents[3] / "examples" / "swe_bench_tiny"

pytestmark = needs_jails


@pytest.fixture(scope="module")
def benchmark() -> SWEBench:
    return SWEBench(TINY)


def _task(benchmark: SWEBench, n: int):
    return next(t for t in benchmark.tasks() if t.id == f"flashrsi__tinytext-{n}")


def _rollout(server, benchmark, task, name: str, commands: list[str]):
    replies = [{"tool_calls": [{"name": "shell", "arguments": {"command": c}}]} for c in commands]
    model = server.add_script(name, [*replies, "Done."])
    role = RoleConfig.model_validate(
        {"type": "miniagent", "llm": {"model": model, "base_url": server.root_url}}
    )
    with target_agent(role) as agent:
        return benchmark.rollout(agent, task, split="train", attempt=0)


def _applying(patch: str) -> str:
    return f"cat > /tmp/fix.patch <<'PATCH'\n{patch}PATCH\ngit apply /tmp/fix.patch"


def test_an_agent_that_applies_the_fix_resolves_the_instance(server, benchmark):
    task = _task(benchmark, 2)

    trajectory = _rollout(
        server, benchmark, task, "fixes", ["ls tinytext", _applying(task.verifier["gold_patch"])]
    )

    assert trajectory.status == Status.SUCCESS and trajectory.score == 1.0
    assert "+    return text[: max(width - len(ellipsis), 0)] + ellipsis" in trajectory.answer
    report = trajectory.metadata["swe_bench"]
    assert report["resolved"] and report["tests_status"]["FAIL_TO_PASS"]["failure"] == []
    assert "PASSED tests/test_wrap.py::" in trajectory.metadata["test_log_tail"]


def test_an_agent_that_changes_nothing_does_not_resolve_it(server, benchmark):
    trajectory = _rollout(server, benchmark, _task(benchmark, 3), "looks", ["git status"])

    assert trajectory.status == Status.FAILURE and trajectory.score == 0.0
    assert trajectory.answer == ""
    failing = trajectory.metadata["swe_bench"]["tests_status"]["FAIL_TO_PASS"]["failure"]
    assert failing == ["tests/test_stats.py::test_runs_of_whitespace"]


def test_a_wrong_fix_does_not_resolve_it_and_the_agents_git_config_never_runs_on_the_host(
    server, benchmark, tmp_path
):
    """The agent's checkout is read as files: a command it plants for git
    (`core.fsmonitor`) is not run by the host's git, and new files are part of the patch."""
    planted = tmp_path / "planted"
    commands = [
        f"git config core.fsmonitor 'touch {planted}'",
        'sed -i \'s/text.split(" ")/text.split("  ")/\' tinytext/stats.py',
        "echo 'notes' > NOTES.txt",
    ]

    trajectory = _rollout(server, benchmark, _task(benchmark, 3), "wrong", commands)

    assert trajectory.score == 0.0 and trajectory.status == Status.FAILURE
    assert 'text.split("  ")' in trajectory.answer and "+++ b/NOTES.txt" in trajectory.answer
    assert not planted.exists()
