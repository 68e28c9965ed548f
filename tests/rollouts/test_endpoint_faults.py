"""An endpoint's faults are the infrastructure's, not the candidate's, end to end: a real
agent (MiniAgent in its jail, and the plain-LLM target) evaluated by the rollout engine, the
real gateway in front of a misbehaving endpoint on loopback. Each fault makes the rollout an
`infra_error` of type `EndpointFault` naming the cause, which the ladder reruns and then
scores 0 with the denominator kept; the gateway serves the next rollout as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flashrsi_dagster.agents import target_agent
from flashrsi_dagster.benchmarks.text_classification import TextClassification
from flashrsi_dagster.config import RoleConfig
from flashrsi_dagster.environments.confinement import ENDPOINT_FAULT, Confinement
from flashrsi_dagster.gateway import Gateway
from flashrsi_dagster.records import RecordStore, Redactor, Status
from flashrsi_dagster.rollouts.engine import Settings, run_rollouts
from flashrsi_dagster.rollouts.record import RolloutRecord
from tests.conftest import needs_jails
from tests.gateway.misbehaving_endpoint import (
    MisbehavingEndpoint,
    answer,
    chat_reply,
    endless,
    reset,
    trickle,
)

TIMEOUT = 2.0
"""`llm.timeout`: the gateway's deadline for one whole model call."""
DEEP = b"[" * 100_000 + b"]" * 100_000
FAULTS = {
    "http-500": (answer(500, {"error": {"message": "boom"}}), "answered HTTP 500"),
    "http-429": (answer(429, {"error": {"message": "slow down"}}), "answered HTTP 429"),
    "connection-reset": (reset, "failed: "),
    "trickle-past-the-timeout": (trickle(0.4), f"did not answer within {TIMEOUT:g} s"),
    "malformed-json": (answer(200, b'{"choices": [{"mess'), "not valid JSON"),
    "wrong-schema": (answer(200, {"id": "x", "object": "chat.completion"}), "(no choices)"),
    "negative-usage": (
        answer(200, chat_reply(usage={"prompt_tokens": -5, "completion_tokens": 2})),
        "usage prompt_tokens = -5",
    ),
    "60-MB-answer": (endless(60 << 20), "over the bound of 8388608"),
    # valid JSON, not Unicode: MiniAgent exited 1 (an error), the plain-LLM target's record
    # write raised UnicodeEncodeError out of the rollout engine
    "lone-surrogate": (answer(200, json.dumps(chat_reply("sp\ud800am")).encode()), "surrogate"),
    "deeply-nested-json": (
        answer(200, b'{"choices": [{"message": {"content": "spam"}}], "x": ' + DEEP + b"}"),
        "JSON nested deeper than 128 levels",
    ),
}
AGENTS = {"miniagent": needs_jails, "llm": ()}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[MisbehavingEndpoint]:
    with MisbehavingEndpoint() as running:
        yield running


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    """One gateway for every fault: it must keep serving after each."""
    with Gateway() as running:
        yield running


@pytest.fixture
def benchmark(tmp_path: Path) -> TextClassification:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "t0", "text": "win a prize now", "label": "spam"}) + "\n")
    return TextClassification(data)


def _evaluate(agent_type: str, endpoint, gateway, benchmark, record: Path):
    role = RoleConfig.model_validate(
        {
            "type": agent_type,
            "timeout": 60,
            "llm": {"model": "m", "base_url": endpoint.url, "max_retries": 0, "timeout": TIMEOUT},
        }
    )
    jailed = agent_type == "miniagent"
    confinement = Confinement(jailed=jailed, experiment=record.stem, gateway=gateway)
    rollouts = RolloutRecord(record, RecordStore(record.parent, Redactor()))
    with target_agent(role, confinement=confinement) as agent:
        final = run_rollouts(
            benchmark,
            agent,
            benchmark.tasks(),
            rollouts,
            split="dev",
            settings=Settings(concurrency=1, max_infra_reruns=1),
        )
    return final, rollouts.load()


@pytest.mark.slow
@pytest.mark.parametrize(
    "agent_type", [pytest.param(a, marks=m) for a, m in AGENTS.items()], ids=list(AGENTS)
)
@pytest.mark.parametrize("fault", FAULTS, ids=list(FAULTS))
def test_an_endpoint_fault_is_an_infrastructure_fault_rerun_by_the_ladder(
    fault, agent_type, endpoint, gateway, benchmark, tmp_path
):
    behaviour, cause = FAULTS[fault]
    endpoint.behaviour = behaviour
    try:
        final, tries = _evaluate(agent_type, endpoint, gateway, benchmark, tmp_path / "f.jsonl")
    finally:
        endpoint.behaviour = answer()

    assert len(final) == 1 and final[0].score == 0.0  # kept in the denominator, scored 0
    assert [t.metadata["rerun"] for t in tries] == [0, 1]  # the ladder reran it
    for trajectory in tries:
        assert trajectory.status == Status.INFRA_ERROR, trajectory.error
        if trajectory.error.type == "EndpointHung":  # the client's timeout came first
            assert fault == "trickle-past-the-timeout", trajectory.error
            continue
        assert trajectory.error.type == ENDPOINT_FAULT, trajectory.error
        assert cause in trajectory.error.message, trajectory.error.message

    # The same gateway, the endpoint behaving again: the next evaluation is answered.
    final, _ = _evaluate(agent_type, endpoint, gateway, benchmark, tmp_path / "ok.jsonl")
    assert (final[0].status, final[0].score) == (Status.SUCCESS, 1.0), final[0].error
