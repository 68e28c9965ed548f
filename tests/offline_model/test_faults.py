"""Latency and faults: seeded, in request order, and what real clients see of them."""

from __future__ import annotations

import threading

import httpx2
import openai
import pytest

from flashrsi_dagster.offline_model import OfflineModelServer, ServerConfig
from flashrsi_dagster.offline_model.faults import Fault, FaultPlan
from tests.conftest import PATIENCE, wait_until

HELLO = [{"role": "user", "content": "hello"}]


def _client(server: OfflineModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="x", max_retries=0, timeout=10)


def _draws(config: ServerConfig, count: int = 50) -> list[Fault]:
    plan = FaultPlan(config)
    return [plan.next() for _ in range(count)]


def test_the_same_seed_draws_the_same_faults_and_delays():
    config = ServerConfig(latency_ms=100, jitter_ms=50, failure_rate=0.5, seed=7)

    run = _draws(config)

    assert run == _draws(config)
    assert run != _draws(config.model_copy(update={"seed": 8}))
    assert {fault.kind for fault in run} == {None, "429", "500", "hang"}
    assert all(0.05 <= fault.delay <= 0.15 for fault in run)


def test_a_429_makes_the_sdk_raise_rate_limit_error_with_retry_after_zero():
    config = ServerConfig(failure_rate=1.0, failure_kinds=("429",))
    with OfflineModelServer(config) as server:
        with pytest.raises(openai.RateLimitError) as limited:
            _client(server).chat.completions.create(model="simulator/echo", messages=HELLO)

        records = server.requests

    assert limited.value.response.headers["retry-after"] == "0"
    assert limited.value.body["type"] == "rate_limit_error"
    assert [(r.status_code, r.fault) for r in records] == [(429, "429")]


def test_a_500_is_an_internal_server_error_in_the_dialect_shape():
    config = ServerConfig(failure_rate=1.0, failure_kinds=("500",))
    with OfflineModelServer(config) as server:
        with pytest.raises(openai.InternalServerError) as failed:
            _client(server).chat.completions.create(model="simulator/echo", messages=HELLO)
        anthropic = httpx2.post(
            f"{server.root_url}/v1/messages",
            json={"model": "simulator/echo", "max_tokens": 5, "messages": HELLO},
        )

    assert failed.value.body["type"] == "server_error"
    assert anthropic.status_code == 500
    assert anthropic.json()["error"]["type"] == "api_error"


def test_faults_follow_request_order_across_endpoints():
    config = ServerConfig(failure_rate=0.5, failure_kinds=("429", "500"), seed=11)
    expected = [fault.kind for fault in _draws(config, 12)]
    with OfflineModelServer(config) as server, httpx2.Client() as http:
        for i in range(12):
            path = "chat/completions" if i % 2 else "messages"
            body = {"model": "simulator/echo", "max_tokens": 5, "messages": HELLO}
            http.post(f"{server.url}/{path}", json=body)
        seen = [record.fault for record in server.requests]

    assert seen == expected


def test_latency_delays_every_answer():
    with OfflineModelServer(ServerConfig(latency_ms=300)) as server:
        client = _client(server)
        answers = [
            client.chat.completions.create(model="simulator/echo", messages=HELLO) for _ in range(2)
        ]

    assert [a.choices[0].message.content for a in answers] == ["hello"] * 2
    assert [r.duration >= 0.3 for r in server.requests] == [True] * 2


def test_requests_hang_side_by_side_and_shutdown_cuts_them():
    # A hang outlasts the callers' patience, which outlasts a slow machine: a shutdown that
    # waited for the hangs would leave the callers with a timeout, not a cut connection.
    config = ServerConfig(failure_rate=1.0, failure_kinds=("hang",), hang_seconds=2 * PATIENCE)
    server = OfflineModelServer(config).start()
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            httpx2.post(
                f"{server.url}/chat/completions",
                json={"model": "simulator/echo", "messages": HELLO},
                timeout=PATIENCE,
            )
        except httpx2.HTTPError as error:
            outcome.append(error)

    callers = [threading.Thread(target=call) for _ in range(8)]
    for caller in callers:
        caller.start()
    wait_until(lambda: server.in_flight == 8, "eight requests hanging at once")
    server.close()
    for caller in callers:
        caller.join(PATIENCE)

    assert not any(caller.is_alive() for caller in callers)
    assert [type(error) for error in outcome] == [httpx2.RemoteProtocolError] * 8
    assert [(r.fault, r.status_code) for r in server.requests] == [("hang", None)] * 8
    assert server.in_flight == 0
