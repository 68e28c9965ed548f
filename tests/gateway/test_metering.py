"""Tokens from each API's usage object, cost with Anthropic's cache ratios, sums that stay
None once a call had no price; a body that is not JSON goes upstream as it is and counts 0."""

from __future__ import annotations

import httpx2
import pytest

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.gateway.metering import Tokens, Usage, tokens_of, tokens_of_body

PRICE = PriceConfig(input_per_mtok=3.0, output_per_mtok=15.0)


def test_each_api_names_its_tokens_its_own_way():
    assert tokens_of("chat", {"prompt_tokens": 7, "completion_tokens": 2}) == Tokens(7, 2)
    assert tokens_of("responses", {"input_tokens": 7, "output_tokens": 2}) == Tokens(7, 2)
    anthropic = {
        "input_tokens": 5,
        "output_tokens": 2,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 10,
    }
    assert tokens_of("messages", anthropic) == Tokens(115, 2, cache_read=100, cache_write=10)


def test_odd_usage_counts_as_nothing():
    assert tokens_of("chat", None) == Tokens()
    assert tokens_of("chat", {"prompt_tokens": "7", "completion_tokens": -1}) == Tokens()
    assert tokens_of_body("chat", b"not json") == Tokens()
    assert tokens_of_body("chat", b"[1, 2]") == Tokens()


def test_cost_applies_anthropics_cache_ratios_to_the_input_price():
    tokens = Tokens(115, 2, cache_read=100, cache_write=10)

    billed_input = 5 + 1.25 * 10 + 0.1 * 100
    assert tokens.cost(PRICE) == pytest.approx((billed_input * 3.0 + 2 * 15.0) / 1e6)
    assert tokens.cost(None) is None


def test_a_sum_with_an_unpriced_call_has_no_cost():
    total = Usage()
    total.add(Tokens(1, 1), 0.5)
    unpriced = Usage()
    unpriced.add(Tokens(1, 1), None)

    assert total.cost_usd == 0.5
    total.merge(unpriced)
    assert (total.calls, total.tokens, total.cost_usd) == (2, 4, None)


def test_a_body_that_is_not_json_is_forwarded_and_metered_as_nothing(gateway, upstream_of):
    token = gateway.grant(experiment="x", role="worker", run_id="r1", upstream=upstream_of())

    answer = httpx2.post(
        f"{gateway.url}/v1/chat/completions",
        content=b'{"model": ',
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
    )

    assert answer.status_code == 400  # the simulator's word, relayed
    assert "not valid JSON" in answer.json()["error"]["message"]
    used = gateway.usage(run_id="r1")
    assert (used.calls, used.input_tokens, used.output_tokens) == (1, 0, 0)
