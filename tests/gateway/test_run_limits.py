"""What one run's grant holds it to: a count of answered model calls, tools it may not offer,
and web fetches (public addresses only, or the simulator's pages)."""

from __future__ import annotations

import httpx2
import openai
import pytest

from flashrsi_dagster.gateway import GatewayError, WebAccess
from tests.gateway.conftest import USER, openai_client

SHELL_TOOL = {"type": "function", "function": {"name": "shell", "parameters": {}}}


def _grant(gateway, upstream, **limits) -> str:
    return gateway.grant(experiment="x", role="r", run_id="r1", upstream=upstream, **limits)


def _chat(client: openai.OpenAI, **extra):
    return client.chat.completions.create(model="simulator/echo", messages=USER, **extra)


def test_max_calls_answers_that_many_model_calls_then_refuses_with_403(gateway, upstream_of):
    token = _grant(gateway, upstream_of(), max_calls=2)
    client = openai_client(gateway, token)

    _chat(client), _chat(client)
    with pytest.raises(openai.PermissionDeniedError, match="used its 2 model call"):
        _chat(client)
    client.models.list()  # a free endpoint, not a model call: still served

    usage = gateway.revoke(token)
    assert (usage.answered, usage.calls, len(usage.over_budget)) == (2, 2, 1)
    assert usage.capped == []  # the run's own budget, not the role's spending cap


def test_max_calls_zero_refuses_every_model_call_and_none_refuses_none(gateway, upstream_of):
    none, zero = _grant(gateway, upstream_of()), _grant(gateway, upstream_of(), max_calls=0)
    for _ in range(3):
        _chat(openai_client(gateway, none))
    with pytest.raises(openai.PermissionDeniedError):
        _chat(openai_client(gateway, zero))
    with pytest.raises(GatewayError, match="must not be negative"):
        _grant(gateway, upstream_of(), max_calls=-1)


def test_a_request_offering_a_denied_tool_is_refused(gateway, upstream_of):
    token = _grant(gateway, upstream_of(), deny_tools=frozenset({"shell"}))
    client = openai_client(gateway, token)

    with pytest.raises(openai.PermissionDeniedError, match="offers the model shell"):
        _chat(client, tools=[SHELL_TOOL])
    _chat(client)  # no tools offered: served

    assert len(gateway.revoke(token).denied) == 1


def _fetch(gateway, token: str, url: object) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx2.post(f"{gateway.url}/v1/web/fetch", json={"url": url}, headers=headers)


def test_web_fetch_is_refused_without_web_access(gateway, upstream_of):
    token = _grant(gateway, upstream_of())

    answer = _fetch(gateway, token, "https://example.org/")

    assert answer.status_code == 403 and "web access is off" in answer.text


def test_a_direct_fetch_of_a_host_address_is_refused(gateway, upstream_of, simulator):
    """The gateway runs on the host: a fetch of loopback (the simulator here, or the
    gateway's own listener) would reach what the jail keeps out of reach."""
    token = _grant(gateway, upstream_of(), web=WebAccess())

    for url in (f"{simulator.url}/models", "http://localhost:9/", "http://10.0.0.1/"):
        answer = _fetch(gateway, token, url)
        assert answer.status_code == 403 and "non-public address" in answer.text
    assert _fetch(gateway, token, "file:///etc/passwd").status_code == 400
    assert _fetch(gateway, token, 7).status_code == 400


def test_the_simulator_serves_deterministic_pages_through_the_gateway(gateway, upstream_of):
    token = _grant(gateway, upstream_of(), web=WebAccess(source="simulator", max_bytes=30))

    first, again = (_fetch(gateway, token, "https://example.org/a").json() for _ in range(2))

    assert first == again
    assert first["status"] == 200 and first["truncated"] is True
    assert first["text"] == "Offline simulator page for htt"
    assert gateway.revoke(token).web_requests == 2
