"""Caps per (experiment, role), in tokens and in USD: a call may cross the cap, the next one is
refused with a 402 in the client's dialect, and the refusal is in the run's `refused`."""

from __future__ import annotations

import openai
import pytest

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.gateway import Caps, GatewayError
from tests.gateway.conftest import USER, anthropic_post, openai_client

# "hello there" through simulator/echo: 3 input and 3 output tokens per call.
PRICE = PriceConfig(input_per_mtok=1000, output_per_mtok=1000)  # $0.006 a call


def _grant(gateway, upstream, run_id="r1", role="worker") -> str:
    return gateway.grant(experiment="x", role=role, run_id=run_id, upstream=upstream)


def _call(gateway, token):
    return openai_client(gateway, token).chat.completions.create(
        model="simulator/echo", messages=USER
    )


def test_a_token_cap_refuses_the_call_after_the_one_that_crossed_it(gateway, upstream_of):
    gateway.set_caps("x", "worker", Caps(max_tokens=10))
    token = _grant(gateway, upstream_of())
    _call(gateway, token)
    _call(gateway, token)  # 6 used < 10: allowed, and it ends at 12

    with pytest.raises(openai.APIStatusError) as refused:
        _call(gateway, token)

    message = "gateway: role 'worker' of experiment 'x' reached its cap of 10 tokens (used 12)"
    assert refused.value.status_code == 402
    assert refused.value.body == {
        "type": "budget_exceeded", "message": message, "param": None, "code": "budget_exceeded"
    }  # fmt: skip
    assert refused.value.response.json()["error"]["type"] == "budget_exceeded"
    assert gateway.revoke(token).refused == [message]


def test_a_cap_covers_every_run_of_the_role_and_no_other_role(gateway, upstream_of):
    gateway.set_caps("x", "worker", Caps(max_tokens=6))
    _call(gateway, _grant(gateway, upstream_of(), run_id="w1"))

    with pytest.raises(openai.APIStatusError, match="reached its cap of 6 tokens"):
        _call(gateway, _grant(gateway, upstream_of(), run_id="w2"))
    assert _call(gateway, _grant(gateway, upstream_of(), "t1", role="target")).usage


def test_a_usd_cap(gateway, upstream_of):
    gateway.set_caps("x", "worker", Caps(max_usd=0.01))
    token = _grant(gateway, upstream_of(price=PRICE))
    _call(gateway, token)
    _call(gateway, token)

    with pytest.raises(openai.APIStatusError) as refused:
        _call(gateway, token)

    assert refused.value.status_code == 402
    assert refused.value.message.endswith("reached its cap of $0.01 (used $0.012)")
    assert gateway.usage(experiment="x", role="worker").cost_usd == pytest.approx(0.012)


def test_an_anthropic_client_gets_the_402_in_anthropic_shape(gateway, upstream_of):
    gateway.set_caps("x", "worker", Caps(max_tokens=0))
    token = _grant(gateway, upstream_of("anthropic"))

    refused = anthropic_post(gateway, token, {"model": "simulator/echo", "messages": USER})

    assert refused.status_code == 402
    body = refused.json()
    assert body["type"] == "error" and body["error"]["type"] == "budget_exceeded"
    assert "reached its cap of 0 tokens (used 0)" in body["error"]["message"]


def test_a_usd_cap_needs_a_priced_upstream(gateway, upstream_of):
    gateway.set_caps("x", "worker", Caps(max_usd=1.0))
    with pytest.raises(GatewayError, match="has a USD cap, but the upstream"):
        _grant(gateway, upstream_of())

    _grant(gateway, upstream_of(), role="target")
    with pytest.raises(GatewayError, match="has no price"):
        gateway.set_caps("x", "target", Caps(max_usd=1.0))


def test_an_unpriced_upstream_has_no_cost(gateway, upstream_of):
    _call(gateway, _grant(gateway, upstream_of()))

    assert gateway.usage().cost_usd is None
    assert gateway.usage(experiment="nobody").cost_usd == 0.0
