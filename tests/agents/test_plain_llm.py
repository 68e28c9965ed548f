"""The plain-LLM target: one call, made through the model gateway like every agent's."""

from __future__ import annotations

from pathlib import Path

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.confinement import Confinement
from flashrsi_dagster.gateway import Caps, Gateway
from flashrsi_dagster.records import Status


def _role(**fields) -> RoleConfig:
    return RoleConfig.model_validate(
        {
            "type": "llm",
            "llm": {"model": "simulator/echo", "base_url": "offline", "timeout": 30},
            **fields,
        }
    )


def test_the_call_goes_through_the_gateway_and_is_metered_there(tmp_path: Path):
    with Gateway() as gateway:
        confinement = Confinement(jailed=False, experiment="e1", gateway=gateway)
        with target_agent(_role(), confinement=confinement) as agent:
            trajectory = agent.run(tmp_path, "hello there", task_id="t")
        used = gateway.usage(experiment="e1", role="target")

    assert trajectory.status == Status.SUCCESS and trajectory.answer == "hello there"
    assert used.calls == 1 and used.input_tokens > 0
    assert trajectory.usage.input_tokens == used.input_tokens  # the gateway's count


def test_a_role_over_its_token_cap_is_an_infrastructure_fault_naming_the_cap(tmp_path: Path):
    with Gateway() as gateway:
        caps = {"target": Caps(max_tokens=1)}
        confinement = Confinement(jailed=False, experiment="e2", gateway=gateway, caps=caps)
        with target_agent(_role(), confinement=confinement) as agent:
            first = agent.run(tmp_path, "one", task_id="t1")
            second = agent.run(tmp_path, "two", task_id="t2")

    assert first.status == Status.SUCCESS  # a call may cross the cap; the next is refused
    assert second.status == Status.INFRA_ERROR
    assert "cap" in second.error.message and "target" in second.error.message


def test_zero_budgets_still_allow_its_one_call_the_final_answer(tmp_path: Path):
    """It runs no tool and takes no tool-using turn: `max_turns: 0` and `max_tool_calls: 0`
    are honoured by its one call, which is the final answer (and the gateway's one call)."""
    with Gateway() as gateway:
        confinement = Confinement(jailed=False, experiment="e3", gateway=gateway)
        role = _role(max_turns=0, max_tool_calls=0)
        with target_agent(role, confinement=confinement) as agent:
            trajectory = agent.run(tmp_path, "only the answer", task_id="t")
        used = gateway.usage(experiment="e3", role="target")

    assert trajectory.status == Status.SUCCESS and trajectory.answer == "only the answer"
    assert (trajectory.usage.turns, trajectory.usage.tool_calls, used.calls) == (1, 0, 1)
