"""Tokens from each API's usage object, cost with Anthropic's cache ratios, sums that stay
None once a call had no price; a request body that is not JSON goes upstream as it is and
counts 0; usage that is not a count is the endpoint's fault, and no usage is unknown usage."""

from __future__ import annotations

import httpx2
import pytest

from flashrsi_dagster.config.models import PriceConfig
from flashrsi_dagster.gateway.answers import MAX_CALL_TOKENS, EndpointFault, usage_tokens
from flashrsi_dagster.gateway.metering import Tokens, Usage, tokens_of

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


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -1, "completion_tokens": 2},
        {"prompt_tokens": "7", "completion_tokens": 2},
        {"prompt_tokens": 7.5, "completion_tokens": 2},
        {"prompt_tokens": True, "completion_tokens": 2},
        {"prompt_tokens": MAX_CALL_TOKENS + 1, "completion_tokens": 2},
        [7, 2],
    ],
)
def test_usage_that_is_not_a_count_is_the_endpoints_fault(usage):
    with pytest.raises(EndpointFault, match="usage"):
        usage_tokens("chat", usage)


def test_no_usage_is_unknown_usage_of_unknown_cost():
    unknown = usage_tokens("chat", None)

    assert (unknown.input, unknown.output, unknown.known) == (0, 0, False)
    assert unknown.cost(PRICE) is None


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
