"""MiniAgent's count budgets, None / 0 / n (`agents/budgets.py`), on scripted models through the
real simulator, the jail and the gateway: no count limit lets a long tool script finish, a
cancel still stops it, an explicit zero runs no tool, a finite budget stops at n with a forced
final answer, and a harness that ignores its budget is stopped by the gateway."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.agents.budgets import OVER_BUDGET, Budget
from flashrsi_dagster.agents.miniagent.adapter import HARNESS
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.records import Status, Trajectory
from tests.conftest import PATIENCE, needs_jails, wait_until
from tests.sabotage.helpers import say, shell, unique

pytestmark = needs_jails


@pytest.fixture(scope="module")
def server():
    with OfflineModelServer(ServerConfig(record_bodies=True)) as running:
        yield running


def _role(server, script: list[dict], **fields) -> tuple[RoleConfig, str]:
    """A MiniAgent role on a fresh script (its name returned, to find its requests)."""
    name = unique("budget")
    server.add_script(name, script)
    llm = {"model": f"simulator/script:{name}", "base_url": server.url, "max_retries": 0}
    role = RoleConfig.model_validate({"type": "miniagent", "llm": llm, **fields})
    return role, f"simulator/script:{name}"


def _requests(server, model: str) -> list[dict]:
    return [r.body for r in server.requests if r.model == model and r.body is not None]


def _tool_outputs(trajectory: Trajectory) -> list[str]:
    return [m["content"] for m in trajectory.messages if m["role"] == "tool"]


def _run(role: RoleConfig, work: Path, harness: Path = HARNESS) -> Trajectory:
    with target_agent(role, harness) as agent:
        return agent.run(work, "count", task_id="t")


def test_budget_semantics_tell_none_from_zero():
    assert Budget(None, None).max_model_calls is None
    assert Budget(0, 0).max_model_calls == 1  # the forced final answer alone
    assert Budget(5, None).max_model_calls == 6
    # n turns that run a tool, one whose call is refused, the forced answer
    assert Budget(None, 0).max_model_calls == 2
    assert Budget(50, 5).max_model_calls == 7
    assert Budget(None, 0).overrun(2, 1) == "the run ran 1 tool calls, over max_tool_calls=0"
    assert "3 model calls, over the 2" in Budget(None, 0).overrun(3, 0)
    assert Budget(None, None).overrun(10_000, 10_000) is None
    assert Budget(None, None).payload() == {"max_turns": None, "max_tool_calls": None}


def test_no_count_limit_lets_a_128_call_script_finish(server, work):
    script = [shell(f"echo {n} >> calls") for n in range(128)] + [say("all 128 done")]
    role, _ = _role(server, script, max_turns=None, max_tool_calls=None)

    trajectory = _run(role, work)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == "all 128 done"
    assert len((work / "calls").read_text().split()) == 128
    assert (trajectory.usage.tool_calls, trajectory.usage.turns) == (128, 129)
    assert "budget" not in trajectory.metadata


def test_a_cancel_after_the_64th_call_stops_an_unlimited_run(server, work):
    """No count limit, yet the run's cancellation applies: `close()` while the 64th call
    runs ends the run; the 65th never runs, and the 64 calls' usage is kept."""
    script = [shell(f"echo {n} >> calls") for n in range(63)]
    script += [shell("echo 63 >> calls; touch sixty-four; sleep 300"), shell("touch 65")]
    role, _ = _role(server, [*script, say("never")], max_turns=None)
    agent = target_agent(role, HARNESS)

    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(agent.run, work, "count", task_id="t")
        # 64 turns: on a loaded machine, minutes
        wait_until((work / "sixty-four").exists, "the 64th call started", timeout=2 * PATIENCE)
        agent.close()
        trajectory = running.result(timeout=PATIENCE)

    assert trajectory.status == Status.ERROR and trajectory.error.type == "Cancelled"
    assert not (work / "65").exists()
    assert len((work / "calls").read_text().split()) == 64
    assert (trajectory.usage.tool_calls, trajectory.usage.turns) == (64, 64)
    assert trajectory.usage.input_tokens > 0 and trajectory.usage.output_tokens > 0


def test_an_explicit_zero_runs_no_tool_and_still_answers(server, work):
    role, model = _role(
        server, [shell("touch ran"), say("answered without tools")], max_tool_calls=0
    )

    trajectory = _run(role, work)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert not (work / "ran").exists()
    assert _tool_outputs(trajectory) == [
        "Error: not run: the tool-call budget of this run (max_tool_calls=0) is spent. "
        "Give your final answer."
    ]
    assert trajectory.answer == "answered without tools"
    assert (trajectory.usage.tool_calls, trajectory.usage.turns) == (0, 2)
    assert trajectory.metadata["budget"]["stopped_by"] == "max_tool_calls"
    assert _requests(server, model)[-1]["tool_choice"] == "none"  # the forced answer


def test_zero_turns_asks_only_for_the_forced_final_answer(server, work):
    role, model = _role(server, [say("forced")], max_turns=0)

    trajectory = _run(role, work)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == "forced"
    assert (trajectory.usage.tool_calls, trajectory.usage.turns) == (0, 1)
    assert [r.get("tool_choice") for r in _requests(server, model)] == ["none"]
    assert trajectory.metadata["budget"] == {
        "max_turns": 0,
        "max_tool_calls": None,
        "stopped_by": "max_turns",
    }


def test_a_finite_tool_budget_runs_exactly_n_and_refuses_the_next(server, work):
    script = [shell(f"echo {n} >> calls") for n in range(6)] + [say("forced after 5")]
    role, model = _role(server, script, max_tool_calls=5)

    trajectory = _run(role, work)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert (work / "calls").read_text().split() == ["0", "1", "2", "3", "4"]
    assert "max_tool_calls=5) is spent" in _tool_outputs(trajectory)[5]
    assert trajectory.answer == "forced after 5"
    assert (trajectory.usage.tool_calls, trajectory.usage.turns) == (5, 7)
    assert trajectory.metadata["budget"]["stopped_by"] == "max_tool_calls"
    assert len(_requests(server, model)) == 7


def test_a_finite_turn_budget_ends_with_the_forced_answer(server, work):
    script = [shell(f"echo {n} >> calls") for n in range(3)] + [say("forced after 3 turns")]
    role, _ = _role(server, [*script, shell("touch never")], max_turns=3)

    trajectory = _run(role, work)

    assert trajectory.status == Status.SUCCESS, trajectory.error
    assert trajectory.answer == "forced after 3 turns"
    assert (trajectory.usage.tool_calls, trajectory.usage.turns) == (3, 4)
    assert trajectory.metadata["budget"]["stopped_by"] == "max_turns"
    assert trajectory.messages[-2]["content"].startswith("Your budget of max_turns=3 is spent")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """The built-in harness edited to ignore the budgets it is given (an evolved candidate
    that edits `runtime/agent.py`, which is not protected)."""
    folder = tmp_path / "hostile"
    shutil.copytree(HARNESS, folder)
    agent = folder / "runtime/agent.py"
    source = agent.read_text()
    ignored = source.replace(
        'Budget(params.get("max_turns", 50), params.get("max_tool_calls"))', "Budget(None, None)"
    )
    assert ignored != source
    agent.write_text(ignored)
    return folder


def test_the_gateway_stops_a_harness_that_ignores_max_turns(server, work, hostile):
    """The gateway answers max_turns + 1 model calls: the fourth is refused (HTTP 403)."""
    script = [shell(f"echo {n} >> calls") for n in range(5)] + [say("never")]
    role, model = _role(server, script, max_turns=2)

    trajectory = _run(role, work, hostile)

    assert trajectory.status == Status.ERROR and trajectory.error.type == OVER_BUDGET
    assert "used its 3 model call(s)" in trajectory.error.message
    assert len(_requests(server, model)) == 3  # the fourth never reached the model
    assert len((work / "calls").read_text().split()) == 3
    assert trajectory.metadata["budget"]["stopped_by"] == "gateway"


def test_the_adapter_fails_a_harness_that_ignores_max_tool_calls(server, work, hostile):
    """Three calls in one turn: within the model calls the gateway allows (3), over the
    tool calls the budget allows (1), which the adapter sees in the reported count."""
    three = [shell(f"echo {n} >> calls")["tool_calls"][0] for n in range(3)]
    script = [{"tool_calls": three}, say("done anyway")]
    role, _ = _role(server, script, max_tool_calls=1)

    trajectory = _run(role, work, hostile)

    assert trajectory.status == Status.ERROR and trajectory.error.type == OVER_BUDGET
    assert "ran 3 tool calls, over max_tool_calls=1" in trajectory.error.message
    assert trajectory.metadata["budget"]["stopped_by"] == "adapter"
